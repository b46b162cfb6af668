/**
 * Everything this client assumes about the training service where its published interface is
 * silent (docs/service-contract.md, Part B), in one place: paths, record schemas, error codes and
 * their statuses, which failures are transient, the known next_action values, link lifetimes.
 * When the real service turns out different, this is the file to edit.
 *
 * Schemas are tolerant: unknown fields are dropped, optional fields default to null. They are
 * strict only about what Hopper relies on, so a change there fails loudly at the edge.
 */
import { createHash } from 'node:crypto';
import * as z from 'zod';

// ---------------------------------------------------------------------------------------------
// Endpoints (A4; B2-B8)

export type HttpMethod = 'GET' | 'POST';

/**
 * How a failed request to an endpoint may be sent again.
 * - 'transient': any transient failure (B9) is retried; the endpoint is idempotent, or a
 *   duplicate is harmless.
 * - 'unprocessed': only failures that prove the request was not processed (429; connection
 *   refused before anything was sent). For endpoints that spend money.
 */
export type RetryPolicy = 'transient' | 'unprocessed';

export interface Endpoint {
  readonly method: HttpMethod;
  /** Path below base_url; `{name}` marks a path parameter. */
  readonly template: string;
  readonly retry: RetryPolicy;
}

export const ENDPOINTS = {
  listDatasets: { method: 'GET', template: '/v1/datasets', retry: 'transient' },
  // Not idempotent, and a duplicate is an orphan the run never names: after a lost answer the
  // caller finds the dataset by its run's name (runDatasetName) before it creates again.
  createDataset: { method: 'POST', template: '/v1/datasets', retry: 'unprocessed' },
  getDataset: { method: 'GET', template: '/v1/datasets/{dataset}', retry: 'transient' },
  // B2: completing a file twice is not an error.
  completeFile: {
    method: 'POST',
    template: '/v1/datasets/{dataset}/files/{file}/complete',
    retry: 'transient',
  },
  // B5 (and the simulated service's rules): suggest is idempotent at structure/pick_decisions.
  suggest: { method: 'POST', template: '/v1/datasets/{dataset}/suggest', retry: 'transient' },
  // Not idempotent (a second call is 409), made safe by the client reading the dataset on 409.
  structure: { method: 'POST', template: '/v1/datasets/{dataset}/structure', retry: 'transient' },
  nextLabelTask: { method: 'GET', template: '/v1/datasets/{dataset}/labels/next', retry: 'transient' },
  // B6: the same label again is 200.
  submitLabel: { method: 'POST', template: '/v1/datasets/{dataset}/labels/{task}', retry: 'transient' },
  listEncoders: { method: 'GET', template: '/v1/encoders', retry: 'transient' },
  // Spends a credit and is not idempotent: see TrainingServiceClient.startTraining.
  startTraining: { method: 'POST', template: '/v1/datasets/{dataset}/models', retry: 'unprocessed' },
  listModels: { method: 'GET', template: '/v1/models', retry: 'transient' },
  getModel: { method: 'GET', template: '/v1/models/{model}', retry: 'transient' },
  getDownloadLink: { method: 'GET', template: '/v1/models/{model}/download', retry: 'transient' },
} as const satisfies Record<string, Endpoint>;

export type EndpointName = keyof typeof ENDPOINTS;

/** `GET /v1/datasets/{dataset}`: the stable name of an endpoint used in errors and logs. */
export function endpointLabel(endpoint: Endpoint): string {
  return `${endpoint.method} ${endpoint.template}`;
}

/** Fills an endpoint's path parameters, URL-encoded. */
export function pathOf(endpoint: Endpoint, params: Readonly<Record<string, string>> = {}): string {
  return endpoint.template.replace(/\{(\w+)\}/g, (_match, name: string) => {
    const value = params[name];
    if (value === undefined || value === '') throw new TypeError(`${endpoint.template}: missing {${name}}`);
    return encodeURIComponent(value);
  });
}

// ---------------------------------------------------------------------------------------------
// Presigned transfers (B2, B8)
//
// - Upload: PUT the raw bytes with Content-Length = the declared size, no Authorization header;
//   403 url_expired -> GET the dataset for a fresh upload_url; 409 conflict -> the file was
//   already uploaded and completed (the simulated service's rule), so complete it and move on.
// - Download: GET, no Authorization header; resume with `Range: bytes=N-` (206 + Content-Range);
//   403 url_expired -> ask for a fresh link; 410 files_expired -> the files are gone.

/** The header asking a download to resume at byte `offset`. */
export function rangeHeader(offset: number): string {
  return `bytes=${offset}-`;
}

/** Names of the presigned-URL transfers, used where an endpoint label would be. */
export const FILE_UPLOAD_LABEL = 'PUT upload_url';
export const FILE_DOWNLOAD_LABEL = 'GET download url';
/** B2 does not say which type to send; presigned URLs signed with a type would need it here. */
export const UPLOAD_CONTENT_TYPE = 'application/octet-stream';

// ---------------------------------------------------------------------------------------------
// Lists (A4, B10)

export const LIST_LIMIT_MAX = 100;

export interface ListParams {
  /** Records with this status only. */
  readonly status?: string;
  /** Datasets whose data has not expired; models whose files are still there. */
  readonly usable?: boolean;
  /** Page size, 1..100 (the service's default is 25). */
  readonly limit?: number;
}

/** Query parameters of one page request. */
export function listQuery(params: ListParams, cursor: string | undefined): Record<string, string> {
  const query: Record<string, string> = {};
  if (params.limit !== undefined) {
    if (!Number.isInteger(params.limit) || params.limit < 1 || params.limit > LIST_LIMIT_MAX) {
      throw new RangeError(`limit must be an integer from 1 to ${LIST_LIMIT_MAX}, got ${params.limit}`);
    }
    query.limit = String(params.limit);
  }
  if (params.status !== undefined) query.status = params.status;
  if (params.usable !== undefined) query.usable = String(params.usable);
  if (cursor !== undefined) query.cursor = cursor;
  return query;
}

// ---------------------------------------------------------------------------------------------
// next_action (A3, B3)

/** What the client does next, with the steps where each value is seen (B3). */
export const NEXT_ACTIONS = {
  upload_files: { record: 'dataset', steps: [1] },
  wait: { record: 'any', steps: [1, 2, 3, 4] },
  start_over: { record: 'dataset', steps: [1] },
  structure: { record: 'dataset', steps: [2] },
  pick_decisions: { record: 'dataset', steps: [2] },
  label_examples: { record: 'dataset', steps: [3] },
  start_training: { record: 'dataset', steps: [3] },
  // A model that failed; a dataset whose training failed shows it too (what a resumed run starts from).
  retry: { record: 'any', steps: [4] },
  download: { record: 'model', steps: [5] },
  none: { record: 'model', steps: [5] },
  expired: { record: 'dataset', steps: [1, 2, 3] },
} as const satisfies Record<string, { record: 'dataset' | 'model' | 'any'; steps: readonly number[] }>;

export type NextAction = keyof typeof NEXT_ACTIONS;
const NEXT_ACTION_VALUES = Object.keys(NEXT_ACTIONS) as [NextAction, ...NextAction[]];

export function isKnownNextAction(value: string): value is NextAction {
  return Object.hasOwn(NEXT_ACTIONS, value);
}

/**
 * A dataset's next_actions from which a training starts (B7): ready to train, or to train again
 * after a failed training. Assumed: a dataset stays at start_training after one of its models is
 * trained, so another training (a sweep's next encoder, a resumed run) starts from the same
 * dataset with no second upload. B7 refuses a training only at neither value, and the interface's
 * `usable` filter keeps the datasets "a new training can start from"; the simulated service
 * does the same (test/service/models.test.ts).
 */
export const TRAINABLE_NEXT_ACTIONS: readonly NextAction[] = ['start_training', 'retry'];

// ---------------------------------------------------------------------------------------------
// Statuses (B2, B4-B7). The service shows no full list (A2): these are the ones assumed,
// and a record with any other fails the schema, naming the field, like an unknown next_action.

export const FILE_STATUS = { pending: 'pending', uploaded: 'uploaded' } as const;

/**
 * A dataset's statuses, in the order a dataset meets them (B2-B6; `expired`, B3). B5 names no
 * status for a dataset that answered suggest: `suggested` is the simulated service's.
 */
export const DATASET_STATUSES = [
  'uploading',
  'reading',
  'unreadable',
  'read',
  'suggested',
  'structuring',
  'labeling',
  'ready',
  'expired',
] as const;
export type DatasetStatus = (typeof DATASET_STATUSES)[number];

/**
 * A model's statuses (B7). `refunded`: a done model whose files went with its credit; B7 names
 * the case, not its status, which is the simulated service's.
 */
export const MODEL_STATUSES = ['queued', 'training', 'done', 'failed', 'refunded'] as const;
export type ModelStatus = (typeof MODEL_STATUSES)[number];
/** A model at these is training: it holds its credit until it ends (B7). */
export const TRAINING_STATUSES: readonly ModelStatus[] = ['queued', 'training'];

/** Whether a model keeps the credit its training took: a failed or refunded one's came back (B7). */
export function keepsCredit(status: ModelStatus): boolean {
  return status !== 'failed' && status !== 'refunded';
}

/**
 * Whether a model holds a credit a run can still use: its training kept its credit and its files
 * are not gone (next_action `none`): queued, training, or done with its files at the service.
 * The one answer: start_training adopts such a model rather than pay again, paidModelOf names it
 * the run's paid model, `hopper run`'s leftovers count it.
 */
export function holdsCredit(status: ModelStatus, nextAction: NextAction): boolean {
  return keepsCredit(status) && nextAction !== 'none';
}

// Where a dataset stands with structuring (B4), for the 409 answers of structure and suggest.
// Both rules live here: the client's reconciliation and the structure step read them.

/** The next_actions at which a dataset waits to be structured: structure, or answer suggestions. */
const AWAITING_STRUCTURE: readonly NextAction[] = ['structure', 'pick_decisions'];
/** Dataset statuses that show POST structure took effect. */
const DATASET_STATUSES_PAST_STRUCTURE: readonly DatasetStatus[] = ['structuring', 'labeling', 'ready'];
const FIRST_STEP_AFTER_STRUCTURE = 3;

/** The dataset still waits for POST structure (or suggest): a 409 there is a real refusal. */
export function awaitsStructure(dataset: Pick<Dataset, 'next_action'>): boolean {
  return AWAITING_STRUCTURE.includes(dataset.next_action);
}

/**
 * POST structure took effect on the dataset: it is structuring, or at step 3 and later. A
 * structure retried after an ambiguous failure and answered 409 succeeded exactly then.
 */
export function isPastStructure(dataset: Pick<Dataset, 'status' | 'step'>): boolean {
  return (
    DATASET_STATUSES_PAST_STRUCTURE.includes(dataset.status) || dataset.step >= FIRST_STEP_AFTER_STRUCTURE
  );
}

// ---------------------------------------------------------------------------------------------
// Link lifetimes (B2, B8). The client never trusts its own clock with these: it reacts to
// 403 url_expired. They are here for callers deciding how long a link is worth keeping.

export const UPLOAD_URL_TTL_MS = 60 * 60 * 1000;
export const DOWNLOAD_LINK_TTL_MS = 15 * 60 * 1000;

// ---------------------------------------------------------------------------------------------
// Errors (B9)

/**
 * The error codes of B9, each with the status the service answers it with: the client's stable
 * error kinds (one error class each), and what the simulated service answers.
 */
export const ERROR_STATUS = {
  invalid_request: 400,
  invalid_label: 400,
  unknown_encoder: 400,
  size_mismatch: 400,
  unauthorized: 401,
  no_credits: 402,
  url_expired: 403,
  not_found: 404,
  conflict: 409,
  not_ready: 409,
  not_uploaded: 409,
  files_expired: 410,
  rate_limited: 429,
  server_error: 500,
  unavailable: 503,
} as const;
export type ServiceErrorKind = keyof typeof ERROR_STATUS;

/** Wire code in `{"error": code}` -> kind. Add an alias here if the real service names one differently. */
export function errorKindOfCode(code: string): ServiceErrorKind | undefined {
  return Object.hasOwn(ERROR_STATUS, code) ? (code as ServiceErrorKind) : undefined;
}

/**
 * Statuses whose kind is not the first code B9 answers with them. 403 is only url_expired in B9;
 * any other 403 is a refusal of the credentials.
 */
const KIND_OF_STATUS: Readonly<Record<number, ServiceErrorKind>> = {
  403: 'unauthorized',
  502: 'unavailable',
  504: 'unavailable',
};

/** The kind of an answer whose code is missing or unknown, from its status alone. */
export function errorKindForStatus(status: number): ServiceErrorKind | undefined {
  const kinds = Object.keys(ERROR_STATUS) as ServiceErrorKind[];
  const kind = KIND_OF_STATUS[status] ?? kinds.find((candidate) => ERROR_STATUS[candidate] === status);
  if (kind !== undefined) return kind;
  if (status >= 500 && status <= 599) return 'server_error';
  if (status >= 400 && status <= 499) return 'invalid_request';
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Answers that went wrong on the way, and a service that misbehaves (beyond B9)
//
// - Garbled in transit: a 2xx whose body is empty or not JSON (cut short, a proxy's page) was
//   mangled after the service acted on the request. It counts as a lost connection
//   (GarbledAnswerError, requestSent): endpoints with the 'transient' policy send it again;
//   POST models (which spends a credit) is not sent again, its caller reconciles by reading the
//   dataset's models. A proxy's HTML 502 page is a 502: transient by B9 already.
// - A 2xx whose JSON lacks a required field or has one of the wrong type: the service is not
//   speaking this contract; retrying cannot help (UnexpectedResponseError, naming the field).
// - Redirects (3xx) are not followed: the contract has none, and a redirect of an API call
//   means the base URL is wrong (UnexpectedResponseError naming where it pointed).
// - A cursor the service hands out twice would page forever: the list stops with an
//   UnexpectedResponseError (pagination.ts).
// - A Retry-After longer than the client waits in a call (maxRetryAfterMs) is honoured, not cut
//   short: the call ends at once with RetryLaterError, which a poll may wait out.

/**
 * The largest answer the client reads: far above the largest the contract produces (a dataset
 * of 1000 files with their upload URLs, a page of 100 model records: well under 1 MiB).
 */
export const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

/** B9: answers with these statuses may be sent again; every other error answer is final. */
export const TRANSIENT_STATUSES: ReadonlySet<number> = new Set([429, 500, 502, 503, 504]);

/** Node/undici error codes meaning the connection failed before any byte of the request left. */
export const NOT_SENT_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

// ---------------------------------------------------------------------------------------------
// Record schemas (A2, B1-B8)

const timestamp = z.string();
const nullableString = z.string().nullable().default(null);
const nullableTimestamp = timestamp.nullable().default(null);
const nullableNumber = z.number().nullable().default(null);
const nullableInt = z.int().nullable().default(null);
const nullableObject = z.record(z.string(), z.unknown()).nullable().default(null);
const nextAction = z.enum(NEXT_ACTION_VALUES);

export const QuestionSchema = z.object({
  id: z.string(),
  question: z.string(),
  choices: z.array(z.string()),
  suggested: z.string(),
});

export const DatasetFileSchema = z.object({
  id: z.string(),
  name: z.string(),
  bytes: z.int().nonnegative(),
  status: z.string(),
  // Present only while the file is pending (B2).
  upload_url: nullableString,
  upload_expires_at: nullableTimestamp,
});

export const DatasetSchema = z.object({
  kind: z.literal('dataset'),
  id: z.string(),
  name: z.string(),
  status: z.enum(DATASET_STATUSES),
  step: z.int(),
  next_action: nextAction,
  created_at: timestamp,
  updated_at: timestamp,
  expires_at: timestamp,
  error: nullableString,
  files: z.array(DatasetFileSchema),
  questions: z.array(QuestionSchema).nullable().default(null),
});

/** A2's model record. B1: any field may be null, except those Hopper cannot work without (B7). */
export const ModelSchema = z.object({
  kind: z.literal('model'),
  id: z.string(),
  dataset_id: z.string(),
  name: z.string(),
  status: z.enum(MODEL_STATUSES),
  step: z.int(),
  next_action: nextAction,
  version: z.int(),
  encoder: z.string(),
  created_at: timestamp,
  updated_at: timestamp,
  public_at: nullableTimestamp,
  files_expire_at: nullableTimestamp,
  files_deleted_at: nullableTimestamp,
  error: nullableString,
  gpu_usd: nullableNumber,
  jev_usd: nullableNumber,
  jev: nullableObject,
  metrics: nullableObject,
  options: nullableObject,
  steps: nullableObject,
  holdout_n: nullableInt,
  onnx_bytes: nullableInt,
  hf_repo: nullableString,
  verdict: nullableString,
});

export function pageSchema<T extends z.ZodType>(item: T) {
  return z.object({ data: z.array(item), next: z.string().nullable().default(null) });
}

export const SuggestionsSchema = z.object({ questions: z.array(QuestionSchema) });

export const LabelTaskSchema = z.object({
  task: z.string(),
  example: z.object({ id: z.string(), text: z.string() }),
  choices: z.array(z.string()),
  remaining: z.int().nonnegative(),
});

export const LabelResultSchema = z.object({ remaining: z.int().nonnegative() });

export const EncoderSchema = z.object({ id: z.string(), name: z.string(), default: z.boolean() });
/** B7 pins `next: null`: encoders come in one page and the client reads only `data`. */
export const EncoderListSchema = z.object({ data: z.array(EncoderSchema) });

export const DownloadLinkSchema = z.object({ url: z.string(), expires_at: timestamp });

/**
 * How long a done model's files stayed at the service after its training finished:
 * `files_expire_at` minus the finish time, or null when the record does not tell. The interface
 * does not name a finish time: `public_at` is read as one, else `updated_at` (which can only be
 * later than the finish, so the retention comes out shorter, never longer, than it was).
 */
export function filesRetentionMs(model: Model): number | null {
  const finished = model.public_at ?? model.updated_at;
  if (model.files_expire_at === null) return null;
  const retention = Date.parse(model.files_expire_at) - Date.parse(finished);
  return Number.isFinite(retention) && retention >= 0 ? retention : null;
}

/**
 * How long a done model's files are assumed to stay at the service when no earlier model showed
 * it (filesRetentionMs): the interface gives no figure, and the simulated service keeps them 24 h.
 * A run rides out an outage of the service while its paid model trains for this long.
 */
export const ASSUMED_FILES_RETENTION_MS = 24 * 60 * 60 * 1000;

/**
 * How long a done model took from its creation (when a client starts polling it) to the end of
 * its training, or null when the record does not tell. The interface leaves the inside of
 * `steps` unshown: its `finished_at` is read as the finish (the simulated service writes
 * `queued_at`, `training_at` and `finished_at` there), else `public_at`.
 */
export function trainingDurationMs(model: Model): number | null {
  const finishedAt = model.steps?.finished_at;
  const finished = typeof finishedAt === 'string' ? finishedAt : model.public_at;
  if (finished === null) return null;
  const duration = Date.parse(finished) - Date.parse(model.created_at);
  return Number.isFinite(duration) && duration >= 0 ? duration : null;
}

export type Question = z.infer<typeof QuestionSchema>;
export type DatasetFile = z.infer<typeof DatasetFileSchema>;
export type Dataset = z.infer<typeof DatasetSchema>;
export type Model = z.infer<typeof ModelSchema>;
export type Page<T> = { data: T[]; next: string | null };
export type Suggestions = z.infer<typeof SuggestionsSchema>;
export type LabelTask = z.infer<typeof LabelTaskSchema>;
export type LabelResult = z.infer<typeof LabelResultSchema>;
export type Encoder = z.infer<typeof EncoderSchema>;
export type DownloadLink = z.infer<typeof DownloadLinkSchema>;

// ---------------------------------------------------------------------------------------------
// Request bodies (B2, B4, B6, B7)

export interface NewDatasetFile {
  /** A plain file name: no `/`, not `..`; unique within the dataset. */
  readonly name: string;
  readonly bytes: number;
  readonly content_type?: string;
}

/**
 * B2's "1-200 chars" for a dataset's name, counted in UTF-16 code units (a JavaScript string's
 * length): an emoji or any character past U+FFFF counts 2, as the service counts it.
 */
export const MAX_DATASET_NAME_LENGTH = 200;
export const isDatasetName = (name: string): boolean =>
  name.length >= 1 && name.length <= MAX_DATASET_NAME_LENGTH;

/**
 * The name a run gives the dataset it creates: the user's name, then ` · run ` and 12 hex digits
 * of sha256(run id), e.g. `reviews · run 3f2a9c0d41be`. The interface has no idempotency key, so
 * this name is how a run finds again a dataset whose creation answer it lost (findRunDataset):
 * unique to the run, and still the user's name first in the service's dashboard. Assumptions
 * (the interface and B2 are silent beyond "1-200 chars"): any characters are allowed, names need
 * not be unique at the service (two runs never share this one), and a dataset keeps its name.
 * The user's name is cut (never inside a surrogate pair) so the whole fits
 * MAX_DATASET_NAME_LENGTH.
 */
export function runDatasetName(name: string, runId: string): string {
  const suffix = `${RUN_NAME_SEPARATOR}${createHash('sha256').update(runId).digest('hex').slice(0, 12)}`;
  let base = name.slice(0, MAX_DATASET_NAME_LENGTH - suffix.length);
  // A lone high surrogate left by the cut would not be a whole character.
  if (/[\uD800-\uDBFF]$/.test(base)) base = base.slice(0, -1);
  return `${base}${suffix}`;
}

const RUN_NAME_SEPARATOR = ' · run ';

/**
 * True when `datasetName` is the dataset a run of a drop named `name` creates (runDatasetName),
 * or `name` itself (datasets of earlier versions, named by the user's name alone).
 */
export function isDatasetNamed(datasetName: string, name: string): boolean {
  if (datasetName === name) return true;
  const at = datasetName.lastIndexOf(RUN_NAME_SEPARATOR);
  if (at < 0 || !/^[0-9a-f]{12}$/.test(datasetName.slice(at + RUN_NAME_SEPARATOR.length))) return false;
  const base = datasetName.slice(0, at);
  // A cut name is a prefix of the user's; an uncut one is the whole of it.
  return base === name || (datasetName.length >= MAX_DATASET_NAME_LENGTH - 1 && name.startsWith(base));
}

/**
 * How far the service's clock (a dataset's created_at) may be behind the clock that stamped the
 * moment a run asked for it: findRunDataset pages back that far before the moment, no further.
 */
export const DATASET_CLOCK_SKEW_MS = 5 * 60_000;

export interface NewDataset {
  /** 1 to MAX_DATASET_NAME_LENGTH UTF-16 code units. */
  readonly name: string;
  /** 1 to 1000 files. */
  readonly files: readonly NewDatasetFile[];
}

/** An answer to a suggested question; a question left out takes its suggested answer. */
export interface StructureAnswer {
  readonly id: string;
  readonly answer: string;
}

export function structureBody(answers: readonly StructureAnswer[] | undefined): object {
  return answers === undefined ? {} : { questions: answers.map(({ id, answer }) => ({ id, answer })) };
}
