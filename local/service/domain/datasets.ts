/**
 * Dataset records: the facts recorded when something happens (creation, uploads, completions,
 * suggest, structure, labels) and the state derived from them and the clock on every read
 * (no timers), so clock.advance() moves a dataset through its phases at once.
 */
import { randomUUID } from 'node:crypto';
import {
  FILE_STATUS,
  type DatasetStatus,
  type NextAction,
} from '../../../lambdas/service-client/contract.js';
import type { FileReadResult } from './data-reader.js';
import { lastLabeledAt, openTaskCount, type HeldOutTask } from './held-out.js';
import { maskText } from './masking.js';

export interface FileUpload {
  bytes: number;
  sha256: string;
  read: FileReadResult;
}

export interface DatasetFile {
  id: string;
  name: string;
  bytes: number;
  /** The last complete upload (a pending file may be PUT again). */
  upload?: FileUpload;
  completedAt?: number;
}

export interface Dataset {
  id: string;
  /** Creation order: lists sort on it, cursors point into it. */
  seq: number;
  name: string;
  createdAt: number;
  expiresAt: number;
  /** Held-out count in force at creation (the reader keeps that many rows). */
  heldOutCount: number;
  files: DatasetFile[];
  /** Set when the last file completes; the outcome is decided then and shown after readingMs. */
  reading?: { endsAt: number; error: string | undefined };
  tasks: HeldOutTask[];
  suggestedAt?: number;
  structuring?: { startedAt: number; endsAt: number; answers: Record<string, string> };
}

/** The next_actions of a dataset (docs/service-contract.md, B3): all but a model's. */
export type DatasetNextAction = Exclude<NextAction, 'retry' | 'download' | 'none'>;

export interface DatasetState {
  status: DatasetStatus;
  step: 1 | 2 | 3;
  nextAction: DatasetNextAction;
  error: string | null;
  updatedAt: number;
}

/** The questions suggest offers; fixed, so every run and every client sees the same ones. */
export const QUESTIONS = [
  {
    id: 'dedupe',
    question: 'Remove rows whose text appears more than once?',
    choices: ['yes', 'no'],
    suggested: 'yes',
  },
  {
    id: 'language',
    question: 'Which language is the data in?',
    choices: ['en', 'multi'],
    suggested: 'en',
  },
] as const;

/** State of a dataset at `now`. */
export function datasetState(dataset: Dataset, now: number): DatasetState {
  if (now < dataset.expiresAt) return liveState(dataset, now);
  // Expiry freezes the flow where it was: phases ending later never end.
  const frozen = liveState(dataset, dataset.expiresAt);
  return { ...frozen, status: 'expired', nextAction: 'expired', updatedAt: dataset.expiresAt };
}

function liveState(dataset: Dataset, at: number): DatasetState {
  let updatedAt = dataset.createdAt;
  for (const file of dataset.files) updatedAt = Math.max(updatedAt, file.completedAt ?? 0);
  const state = (status: DatasetStatus, step: 1 | 2 | 3, nextAction: DatasetNextAction): DatasetState => ({
    status,
    step,
    nextAction,
    error: null,
    updatedAt,
  });

  const { reading, structuring } = dataset;
  if (reading === undefined) return state('uploading', 1, 'upload_files');
  if (at < reading.endsAt) return state('reading', 1, 'wait');
  updatedAt = reading.endsAt;
  if (reading.error !== undefined) return { ...state('unreadable', 1, 'start_over'), error: reading.error };
  if (structuring === undefined) {
    if (dataset.suggestedAt === undefined) return state('read', 2, 'structure');
    updatedAt = Math.max(updatedAt, dataset.suggestedAt);
    return state('suggested', 2, 'pick_decisions');
  }
  updatedAt = structuring.startedAt;
  if (at < structuring.endsAt) return state('structuring', 2, 'wait');
  updatedAt = Math.max(structuring.endsAt, lastLabeledAt(dataset.tasks));
  if (openTaskCount(dataset.tasks) > 0) return state('labeling', 3, 'label_examples');
  return state('ready', 3, 'start_training');
}

/**
 * Decides the reading outcome once every file is complete: the first unreadable file (in the
 * order the files were declared; a file without rows is unreadable), then ids repeated across files.
 * Readable data yields the held-out tasks: the first `heldOutCount` rows, in file order.
 */
export function readDataset(
  dataset: Dataset,
  forceUnreadable: boolean,
): { error: string | undefined; tasks: HeldOutTask[] } {
  const files = dataset.files;
  const first = files[0]?.name ?? '';
  if (forceUnreadable) return { error: `${first}: unreadable (simulated)`, tasks: [] };
  for (const file of files) {
    const error = file.upload?.read.error;
    if (error !== undefined) return { error: `${file.name}: ${error}`, tasks: [] };
  }
  const seen = new Set<string>();
  for (const file of files) {
    for (const id of file.upload?.read.explicitIds ?? []) {
      if (seen.has(id)) return { error: `${file.name}: duplicate id ${JSON.stringify(id)}`, tasks: [] };
      seen.add(id);
    }
  }
  const sample = files.flatMap((file) => file.upload?.read.sample ?? []).slice(0, dataset.heldOutCount);
  const tasks = sample.map((row) => ({
    task: randomUUID(),
    example: { id: row.id, text: maskText(row.text) },
  }));
  return { error: undefined, tasks };
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** Issues a presigned upload URL for a pending file. */
export type UploadLinker = (file: DatasetFile) => { url: string; expiresAt: number };

/**
 * The dataset record (contract B1/B2). Every rendering issues fresh upload URLs for pending
 * files; earlier ones stay valid until their own expiry.
 */
export function renderDataset(dataset: Dataset, now: number, link: UploadLinker): Record<string, unknown> {
  const state = datasetState(dataset, now);
  const record: Record<string, unknown> = {
    kind: 'dataset',
    id: dataset.id,
    name: dataset.name,
    status: state.status,
    step: state.step,
    next_action: state.nextAction,
    created_at: iso(dataset.createdAt),
    updated_at: iso(state.updatedAt),
    expires_at: iso(dataset.expiresAt),
    error: state.error,
    files: dataset.files.map((file) => {
      const base = { id: file.id, name: file.name, bytes: file.bytes };
      if (file.completedAt !== undefined) return { ...base, status: FILE_STATUS.uploaded };
      const { url, expiresAt } = link(file);
      return { ...base, status: FILE_STATUS.pending, upload_url: url, upload_expires_at: iso(expiresAt) };
    }),
  };
  if (state.nextAction === 'pick_decisions') record.questions = QUESTIONS;
  return record;
}
