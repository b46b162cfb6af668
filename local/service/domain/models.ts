/**
 * Model records: fixed at creation (phase lengths, whether the training fails, generated
 * results), with the state derived from the clock on every read.
 */
import type { ModelStatus, NextAction } from '../../../lambdas/service-client/contract.js';
import { ServiceError } from './errors.js';
import { hashString, mulberry32 } from './random.js';

export interface Model {
  id: string;
  seq: number;
  datasetId: string;
  name: string;
  version: number;
  encoder: string;
  createdAt: number;
  trainingAt: number;
  finishedAt: number;
  /** Decided at creation (failTrainings knob). */
  fails: boolean;
  /** Set at creation from the trainingMetrics knob; generated from the id otherwise. */
  metrics?: Record<string, number>;
  onnxBytes: number;
  holdoutN: number;
  filesExpireAt: number;
  decisions: Record<string, string>;
  /** removeModelFiles() test hook. */
  removal?: { how: 'refunded' | 'moved'; at: number };
}

export type ModelNextAction = Extract<NextAction, 'wait' | 'retry' | 'download' | 'none'>;

export interface ModelState {
  status: ModelStatus;
  step: 4 | 5;
  nextAction: ModelNextAction;
  updatedAt: number;
  /** When the files went (expiry or removal); undefined while they are there. */
  filesDeletedAt: number | undefined;
}

export function modelState(model: Model, now: number): ModelState {
  if (now < model.trainingAt) return phase('queued', 4, 'wait', model.createdAt);
  if (now < model.finishedAt) return phase('training', 4, 'wait', model.trainingAt);
  if (model.fails) return phase('failed', 4, 'retry', model.finishedAt);
  const deletedAt = filesDeletedAt(model, now);
  if (deletedAt === undefined) return phase('done', 5, 'download', model.finishedAt);
  const status = model.removal?.how === 'refunded' ? 'refunded' : 'done';
  return { status, step: 5, nextAction: 'none', updatedAt: deletedAt, filesDeletedAt: deletedAt };
}

function phase(status: ModelStatus, step: 4 | 5, nextAction: ModelNextAction, updatedAt: number): ModelState {
  return { status, step, nextAction, updatedAt, filesDeletedAt: undefined };
}

function filesDeletedAt(model: Model, now: number): number | undefined {
  const times = [model.removal?.at, now >= model.filesExpireAt ? model.filesExpireAt : undefined];
  const known = times.filter((time): time is number => time !== undefined);
  return known.length === 0 ? undefined : Math.min(...known);
}

/** Download link and file alike: 410 once the files are gone, 409 before the model is done. */
export function assertFilesServable(model: Model, now: number): void {
  const { status, nextAction } = modelState(model, now);
  if (nextAction === 'none')
    throw new ServiceError('files_expired', `the files of model ${model.id} are gone`);
  if (status !== 'done') throw new ServiceError('not_ready', `model is ${status}, not done`);
}

/** Has the account got this model's credit back at `now` (failed, or refunded)? */
export function creditReturned(model: Model, now: number): boolean {
  if (model.fails) return now >= model.finishedAt;
  return model.removal?.how === 'refunded';
}

const iso = (ms: number): string => new Date(ms).toISOString();
const round = (value: number, digits: number): number => Number(value.toFixed(digits));

/** The model record (docs/service-contract.md, A2; every field present, null until known). */
export function renderModel(model: Model, now: number): Record<string, unknown> {
  const state = modelState(model, now);
  const finished = now >= model.finishedAt;
  const done = finished && !model.fails;
  // Results are a function of the model id: the same model always reports the same numbers.
  const random = mulberry32(hashString(model.id));
  const accuracy = round(0.75 + random() * 0.2, 4);
  const f1 = round(accuracy - random() * 0.05, 4);
  const gpuUsd = round(0.05 + random() * 0.5, 4);
  const jevScore = round(0.6 + random() * 0.35, 4);
  return {
    kind: 'model',
    id: model.id,
    dataset_id: model.datasetId,
    name: model.name,
    status: state.status,
    step: state.step,
    next_action: state.nextAction,
    version: model.version,
    encoder: model.encoder,
    created_at: iso(model.createdAt),
    updated_at: iso(state.updatedAt),
    public_at: done ? iso(model.finishedAt) : null,
    files_expire_at: done ? iso(model.filesExpireAt) : null,
    files_deleted_at: state.filesDeletedAt === undefined ? null : iso(state.filesDeletedAt),
    error: finished && model.fails ? 'training failed (simulated): the credit was returned' : null,
    gpu_usd: finished ? gpuUsd : null,
    jev_usd: done ? round(gpuUsd / 10, 4) : null,
    jev: done ? { score: jevScore } : null,
    metrics: done ? (model.metrics ?? { accuracy, f1 }) : null,
    options: { encoder: model.encoder, decisions: model.decisions },
    steps: {
      queued_at: iso(model.createdAt),
      training_at: now >= model.trainingAt ? iso(model.trainingAt) : null,
      finished_at: finished ? iso(model.finishedAt) : null,
    },
    holdout_n: done ? model.holdoutN : null,
    onnx_bytes: done ? model.onnxBytes : null,
    hf_repo: done && model.removal?.how === 'moved' ? `hopper-sim/${slug(model.name)}` : null,
    verdict: done ? (accuracy >= 0.85 ? 'good' : 'fair') : null,
  };
}

function slug(name: string): string {
  return (
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '') || 'model'
  );
}
