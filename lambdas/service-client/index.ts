/**
 * The training service client. Usage and rules: docs/service-client.md. Every assumption about
 * the service beyond its published interface lives in contract.ts.
 */
export { TrainingServiceClient } from './client.js';
export type {
  TrainingServiceClientOptions,
  RequestOptions,
  ModelsOfDatasetOptions,
  DownloadOptions,
} from './client.js';
export { CursorList } from './pagination.js';
export type { OpenSource } from './transfer.js';
export type { Logger } from './retry.js';
export { backoffDelayMs, mayHaveActed, parseRetryAfterMs } from './retry.js';
export {
  NEXT_ACTIONS,
  isKnownNextAction,
  DATASET_STATUSES,
  MODEL_STATUSES,
  DOWNLOAD_LINK_TTL_MS,
  UPLOAD_URL_TTL_MS,
  LIST_LIMIT_MAX,
  filesRetentionMs,
  awaitsStructure,
  isPastStructure,
  ASSUMED_FILES_RETENTION_MS,
  trainingDurationMs,
} from './contract.js';
export type {
  Dataset,
  DatasetFile,
  DatasetStatus,
  DownloadLink,
  Encoder,
  LabelResult,
  LabelTask,
  ListParams,
  Model,
  ModelStatus,
  NewDataset,
  NewDatasetFile,
  NextAction,
  Page,
  Question,
  StructureAnswer,
  Suggestions,
} from './contract.js';
// Every error class, and ServiceErrorCode.
export * from './errors.js';
