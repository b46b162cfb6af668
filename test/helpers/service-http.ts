/**
 * Plain-HTTP helpers for the simulated service's conformance tests. They use Node's global fetch
 * and nothing from the Hopper client, so a bug on either side shows up in the tests.
 */
import http from 'node:http';
import { afterEach, expect } from 'vitest';
import { DEFAULT_OPTIONS, startSimulatedService } from '../../local/service/index.js';
import type { SimulatedService, SimulatedServiceOptions } from '../../local/service/index.js';

export type { SimulatedService };

/** A started service plus the options it was started with (to know phase lengths). */
export interface Harness {
  service: SimulatedService;
  options: SimulatedServiceOptions;
}

/** Where the manual clock of every test service starts. */
export const CLOCK_START = '2026-01-01T00:00:00.000Z';
export const CLOCK_START_MS = Date.parse(CLOCK_START);

export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;

export async function startHarness(partial: Partial<SimulatedServiceOptions> = {}): Promise<Harness> {
  const options: SimulatedServiceOptions = { ...DEFAULT_OPTIONS, manualClockStart: CLOCK_START, ...partial };
  const service: SimulatedService = await startSimulatedService(options);
  return { service, options };
}

/**
 * Returns a starter for fresh services (one per test keeps clock moves and knobs from leaking);
 * every service it started is closed after each test.
 */
export function useHarnesses(): (partial?: Partial<SimulatedServiceOptions>) => Promise<Harness> {
  const started: Harness[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((h) => h.service.close()));
  });
  return async (partial = {}) => {
    const h = await startHarness(partial);
    started.push(h);
    return h;
  };
}

export interface FileInfo {
  id: string;
  name: string;
  bytes: number;
  status: string;
  upload_url?: string;
  upload_expires_at?: string;
}

export interface Question {
  id: string;
  question: string;
  choices: string[];
  suggested: string;
}

export interface DatasetRecord {
  kind: string;
  id: string;
  name: string;
  status: string;
  step: number;
  next_action: string;
  created_at: string;
  updated_at: string;
  expires_at: string;
  error: string | null;
  files: FileInfo[];
  questions?: Question[];
}

export interface ModelRecord {
  kind: string;
  id: string;
  dataset_id: string;
  name: string;
  status: string;
  step: number;
  next_action: string;
  version: number;
  encoder: string;
  created_at: string;
  updated_at: string;
  public_at: string | null;
  files_expire_at: string | null;
  files_deleted_at: string | null;
  error: string | null;
  gpu_usd: number | null;
  jev_usd: number | null;
  jev: unknown;
  metrics: { accuracy: number; f1: number } | null;
  options: unknown;
  steps: unknown;
  holdout_n: number | null;
  onnx_bytes: number | null;
  hf_repo: string | null;
  verdict: string | null;
}

export interface Page<T> {
  data: T[];
  next: string | null;
}

export interface LabelTask {
  task: string;
  example: { id: string; text: string };
  choices: string[];
  remaining: number;
}

export interface ErrorBody {
  error: string;
  message: string;
}

export interface ApiResponse<T> {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed JSON body; undefined when the body is empty. */
  body: T;
}

export interface CallOptions {
  /** Serialised as JSON. */
  body?: unknown;
  /** Sent as is (takes precedence over body). */
  rawBody?: string;
  /** false: no Authorization header; a string: that exact header value. Default: the right key. */
  auth?: boolean | string;
  headers?: Record<string, string>;
}

/** One call to the API port; never throws on an HTTP error status. */
export async function api<T = unknown>(
  h: Harness,
  method: string,
  path: string,
  opts: CallOptions = {},
): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...opts.headers };
  const auth = opts.auth ?? true;
  if (auth === true) headers.authorization = `Bearer ${h.service.apiKey}`;
  else if (typeof auth === 'string') headers.authorization = auth;
  let body: string | undefined;
  if (opts.rawBody !== undefined) body = opts.rawBody;
  else if (opts.body !== undefined) body = JSON.stringify(opts.body);
  if (body !== undefined) headers['content-type'] ??= 'application/json';
  const res = await fetch(`${h.service.apiUrl}${path}`, { method, headers, body });
  return readResponse<T>(res);
}

export async function readResponse<T>(res: Response): Promise<ApiResponse<T>> {
  const text = await res.text();
  const body = (text === '' ? undefined : JSON.parse(text)) as T;
  return { status: res.status, headers: res.headers, text, body };
}

/** Asserts the status and the exact error body shape of docs/service-contract.md, B9. */
export function expectError(res: ApiResponse<unknown>, status: number, code: string): void {
  expect({ status: res.status, body: res.body }).toMatchObject({ status, body: { error: code } });
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  const body = res.body as ErrorBody;
  expect(Object.keys(body).sort()).toEqual(['error', 'message']);
  expect(typeof body.message).toBe('string');
  expect(body.message.length).toBeGreaterThan(0);
}

/** Asserts a status and returns the body. */
export function expectStatus<T>(res: ApiResponse<T>, status: number): T {
  expect(res.status, res.text).toBe(status);
  return res.body;
}

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

// ---- test data ----

export interface TestFile {
  name: string;
  content: string | Buffer;
}

export function byteLength(content: string | Buffer): number {
  return typeof content === 'string' ? Buffer.byteLength(content) : content.length;
}

/** A CSV with an id column: ids r1..rN. */
export function reviewsCsv(rows: number): string {
  const lines = ['id,text'];
  for (let i = 1; i <= rows; i++) lines.push(`r${i},"Review number ${i}, quite good"`);
  return lines.join('\n') + '\n';
}

export const DEFAULT_FILES: TestFile[] = [{ name: 'reviews.csv', content: reviewsCsv(8) }];

// ---- walking a dataset through its states ----

export async function createDataset(
  h: Harness,
  files: TestFile[] = DEFAULT_FILES,
  name = 'reviews',
): Promise<DatasetRecord> {
  const res = await api<DatasetRecord>(h, 'POST', '/v1/datasets', {
    body: { name, files: files.map((f) => ({ name: f.name, bytes: byteLength(f.content) })) },
  });
  return expectStatus(res, 201);
}

/** PUT to a presigned URL without any Authorization header. */
export async function putFile(
  url: string,
  content: string | Buffer,
  headers: Record<string, string> = {},
): Promise<ApiResponse<unknown>> {
  const res = await fetch(url, { method: 'PUT', body: content, headers });
  return readResponse(res);
}

export function fileByName(record: DatasetRecord, name: string): FileInfo {
  const file = record.files.find((f) => f.name === name);
  if (file === undefined) throw new Error(`no file ${name} in dataset ${record.id}`);
  return file;
}

export async function completeFile(
  h: Harness,
  datasetId: string,
  fileId: string,
): Promise<ApiResponse<unknown>> {
  return api(h, 'POST', `/v1/datasets/${datasetId}/files/${fileId}/complete`);
}

/** Uploads and completes every file; the dataset is then `reading`. */
export async function uploadAndComplete(
  h: Harness,
  record: DatasetRecord,
  files: TestFile[],
): Promise<DatasetRecord> {
  let latest = record;
  for (const file of files) {
    const info = fileByName(record, file.name);
    expectStatus(await putFile(info.upload_url!, file.content), 200);
    latest = expectStatus(await completeFile(h, record.id, info.id), 200) as DatasetRecord;
  }
  return latest;
}

export async function getDataset(h: Harness, id: string): Promise<DatasetRecord> {
  return expectStatus(await api<DatasetRecord>(h, 'GET', `/v1/datasets/${id}`), 200);
}

export async function getModel(h: Harness, id: string): Promise<ModelRecord> {
  return expectStatus(await api<ModelRecord>(h, 'GET', `/v1/models/${id}`), 200);
}

export type DatasetTarget = 'uploading' | 'reading' | 'read' | 'suggested' | 'labeling' | 'ready';

const TARGET_ORDER: DatasetTarget[] = ['uploading', 'reading', 'read', 'suggested', 'labeling', 'ready'];

/**
 * Creates a dataset and walks it to `target` (advancing the clock over the reading and
 * structuring phases). 'suggested' stops after suggest; 'labeling' and 'ready' structure with `{}`
 * (after suggest only when `suggest` is set); 'ready' also labels every example with its first choice.
 */
export async function datasetAt(
  h: Harness,
  target: DatasetTarget,
  opts: { files?: TestFile[]; name?: string; suggest?: boolean } = {},
): Promise<DatasetRecord> {
  const files = opts.files ?? DEFAULT_FILES;
  const reached = (t: DatasetTarget): boolean => TARGET_ORDER.indexOf(target) >= TARGET_ORDER.indexOf(t);
  const record = await createDataset(h, files, opts.name);
  const id = record.id;
  if (!reached('reading')) return record;
  await uploadAndComplete(h, record, files);
  if (!reached('read')) return getDataset(h, id);
  h.service.clock.advance(h.options.readingMs);
  if (reached('suggested') && (target === 'suggested' || opts.suggest === true)) {
    expectStatus(await api(h, 'POST', `/v1/datasets/${id}/suggest`), 200);
  }
  if (!reached('labeling')) return getDataset(h, id);
  expectStatus(await api(h, 'POST', `/v1/datasets/${id}/structure`, { body: {} }), 202);
  h.service.clock.advance(h.options.structuringMs);
  if (target === 'ready') await labelAll(h, id);
  return getDataset(h, id);
}

/** Answers every held-out example with its first choice; returns the tasks in the order served. */
export async function labelAll(h: Harness, datasetId: string): Promise<LabelTask[]> {
  const tasks: LabelTask[] = [];
  for (let i = 0; i <= h.options.heldOutCount; i++) {
    const next = await api<LabelTask>(h, 'GET', `/v1/datasets/${datasetId}/labels/next`);
    if (next.status === 204) return tasks;
    const task = expectStatus(next, 200);
    tasks.push(task);
    const posted = await api(h, 'POST', `/v1/datasets/${datasetId}/labels/${task.task}`, {
      body: { label: task.choices[0] },
    });
    expectStatus(posted, 200);
  }
  throw new Error(`labels/next never answered 204 after ${tasks.length} labels`);
}

export async function createModel(
  h: Harness,
  datasetId: string,
  encoder = defaultEncoder(h),
): Promise<ApiResponse<ModelRecord>> {
  return api<ModelRecord>(h, 'POST', `/v1/datasets/${datasetId}/models`, { body: { encoder } });
}

export function defaultEncoder(h: Harness): string {
  const found = h.options.encoders.find((e) => e.default);
  if (found === undefined) throw new Error('no default encoder in the options');
  return found.id;
}

/** A ready dataset and a model trained from it, walked to `done` (unless `wait` is false). */
export async function doneModel(
  h: Harness,
  opts: { dataset?: DatasetRecord; wait?: boolean } = {},
): Promise<ModelRecord> {
  const dataset = opts.dataset ?? (await datasetAt(h, 'ready'));
  const model = expectStatus(await createModel(h, dataset.id), 201);
  if (opts.wait === false) return model;
  h.service.clock.advance(h.options.queuedMs + h.options.trainingMs);
  return getModel(h, model.id);
}

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const ISO_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * A request through node:http, for what fetch will not send (e.g. a chunked PUT without
 * Content-Length). `chunks` are written one by one, so without a Content-Length header the
 * body goes out with Transfer-Encoding: chunked.
 */
export async function rawRequest(
  url: string,
  method: string,
  chunks: (string | Buffer)[],
  headers: Record<string, string> = {},
): Promise<ApiResponse<unknown>> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (chunk: Buffer) => parts.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        const responseHeaders = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          if (typeof value === 'string') responseHeaders.set(name, value);
        }
        resolve({
          status: res.statusCode ?? 0,
          headers: responseHeaders,
          text,
          body: text === '' ? undefined : (JSON.parse(text) as unknown),
        });
      });
    });
    req.on('error', reject);
    for (const chunk of chunks) req.write(chunk);
    req.end();
  });
}

/** Changes the first character of a token (the last one of base64url may only carry padding bits). */
export function tamper(token: string): string {
  return (token.startsWith('A') ? 'B' : 'A') + token.slice(1);
}

/**
 * A presigned URL with its signature altered: the query parameter that looks like a signature,
 * else the last path segment.
 */
export function tamperUrl(url: string): string {
  const parsed = new URL(url);
  const signatureParam = [...parsed.searchParams.keys()].find((k) => /sig|token/i.test(k));
  if (signatureParam !== undefined) {
    parsed.searchParams.set(signatureParam, tamper(parsed.searchParams.get(signatureParam) ?? ''));
  } else {
    const segments = parsed.pathname.split('/');
    segments[segments.length - 1] = tamper(segments[segments.length - 1] ?? '');
    parsed.pathname = segments.join('/');
  }
  return parsed.toString();
}
