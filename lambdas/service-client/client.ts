/**
 * The training service's client: one method per endpoint, records validated at the edge,
 * transient failures retried (retry.ts), and streaming transfers (transfer.ts).
 */
import type { Readable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import type { Dispatcher } from 'undici';
import { Agent } from './undici.js';
import type * as z from 'zod';
import {
  isPastStructure,
  DATASET_CLOCK_SKEW_MS,
  DatasetSchema,
  DownloadLinkSchema,
  EncoderListSchema,
  ENDPOINTS,
  endpointLabel,
  FILE_STATUS,
  LabelResultSchema,
  LabelTaskSchema,
  listQuery,
  ModelSchema,
  pageSchema,
  pathOf,
  structureBody,
  SuggestionsSchema,
  type Dataset,
  type DatasetFile,
  type DownloadLink,
  type Encoder,
  type EndpointName,
  type LabelResult,
  type LabelTask,
  type ListParams,
  type Model,
  type NewDataset,
  type StructureAnswer,
  type Suggestions,
} from './contract.js';
import { ConflictError, RateLimitedError, unexpectedResponse } from './errors.js';
import { exchangeJson, makeRedactor, parseBody, type JsonAnswer, type Transport } from './http.js';
import { CursorList } from './pagination.js';
import { sharedRateLimiter, type AdaptiveRateLimiter } from './rate-limit.js';
import {
  mayHaveActed,
  SILENT_LOGGER,
  withRetries,
  type Logger,
  type RetryHooks,
  type RetrySettings,
} from './retry.js';
import { downloadStream, uploadFileBytes, type OpenSource, type TransferSettings } from './transfer.js';

/** Options that may differ from one use of the client to the next (withOptions). */
export interface RequestOptions {
  /**
   * The deadline of every call, retries and transfers included: once it aborts, a call in flight
   * stops, no retry starts, and the call fails with a DeadlineError (retryable by the caller,
   * with fresh time). In Lambda: the invocation's remaining time (lambdas/runtime/handler.ts).
   */
  readonly signal?: AbortSignal | undefined;
}

export interface TrainingServiceClientOptions extends RequestOptions {
  /** The service's base_url (paths start with /v1 below it). */
  readonly baseUrl: string;
  readonly apiKey: string;
  /** Per request, from start to the last byte of the answer; for transfers, per wait for data. Default 30 s. */
  readonly timeoutMs?: number;
  /** Retries of a transient failure after the first attempt. Default 5. */
  readonly maxRetries?: number;
  /** Backoff: retry n (from 0) waits random(0, min(cap, base * 2^n)). Defaults 250 ms and 20 s. */
  readonly backoffBaseMs?: number;
  readonly backoffCapMs?: number;
  /** Longest Retry-After honoured as given; longer ones are cut to this. Default 60 s. */
  readonly maxRetryAfterMs?: number;
  /**
   * No retry of a call starts later than this after its first attempt began, so a call that
   * keeps failing (a hung service) ends within this plus `timeoutMs`. Default: no bound.
   */
  readonly callBudgetMs?: number;
  /** Attempts of one upload; download attempts in a row without progress. Default 5. */
  readonly maxTransferAttempts?: number;
  /** Default: silent. Never given the API key. */
  readonly logger?: Logger;
  /** Injected for tests: the wait between retries, and a uniform random number in [0, 1). */
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly random?: () => number;
  /** Default: a keep-alive Agent owned (and closed) by the client. */
  readonly dispatcher?: Dispatcher;
}

export interface ModelsOfDatasetOptions {
  /**
   * The dataset's created_at. Paging stops at the first model created before it: no model of
   * the dataset can be older than the dataset. Without it every page of models is read.
   */
  readonly datasetCreatedAt?: string;
}

export interface DownloadOptions {
  /** The model's onnx_bytes: the download fails if the file's size differs. */
  readonly expectedBytes?: number;
  /** The first byte wanted (`Range: bytes=N-`, the service answers 206): a copy that resumes. */
  readonly from?: number;
}

type Params = Readonly<Record<string, string>>;
type CallOptions = { query?: Record<string, string>; body?: unknown; hooks?: RetryHooks };

type Options = TrainingServiceClientOptions;
type NumberSetting = {
  [K in keyof Options]-?: Options[K] extends number | undefined ? K : never;
}[keyof Options];

/** The setting `name`, or `fallback` when it is not given: a RangeError unless a finite number >= 0. */
function setting(options: Options, name: NumberSetting, fallback: number): number {
  const value = options[name];
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`${name} must be a number >= 0`);
  return value;
}

export class TrainingServiceClient {
  readonly baseUrl: string;
  // Private fields: util.inspect and JSON.stringify of the client never show the key.
  readonly #apiKey: string;
  readonly #transport: Transport;
  readonly #retry: RetrySettings;
  readonly #transfer: TransferSettings;
  readonly #ownAgent: Agent | undefined;
  /**
   * Paces the API requests once the service has answered 429 (rate-limit.ts): the process's
   * limiter for this service (sharedRateLimiter), shared by every client to it.
   */
  readonly #limiter: AdaptiveRateLimiter;
  readonly #options: TrainingServiceClientOptions;
  readonly #signal: AbortSignal | undefined;

  constructor(options: TrainingServiceClientOptions) {
    const url = new URL(options.baseUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError('baseUrl must be http(s)');
    if (typeof options.apiKey !== 'string' || options.apiKey === '')
      throw new TypeError('apiKey is required');
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.#apiKey = options.apiKey;
    this.#limiter = sharedRateLimiter(this.baseUrl);
    this.#options = options;
    this.#signal = options.signal;
    const logger = options.logger ?? SILENT_LOGGER;
    let dispatcher = options.dispatcher;
    if (dispatcher === undefined) {
      this.#ownAgent = new Agent({ keepAliveTimeout: 10_000, keepAliveMaxTimeout: 60_000 });
      dispatcher = this.#ownAgent;
    }
    const timeoutMs = setting(options, 'timeoutMs', 30_000);
    if (timeoutMs === 0) throw new RangeError('timeoutMs must be > 0');
    this.#transport = { dispatcher, timeoutMs, logger, redact: makeRedactor(options.apiKey) };
    this.#retry = {
      maxRetries: Math.floor(setting(options, 'maxRetries', 5)),
      backoffBaseMs: setting(options, 'backoffBaseMs', 250),
      backoffCapMs: setting(options, 'backoffCapMs', 20_000),
      maxRetryAfterMs: setting(options, 'maxRetryAfterMs', 60_000),
      callBudgetMs: setting(options, 'callBudgetMs', Infinity),
      now: Date.now,
      sleep: options.sleep ?? ((ms, signal) => delay(ms, undefined, { signal })),
      random: options.random ?? Math.random,
      logger,
    };
    this.#transfer = {
      transport: this.#transport,
      retry: this.#retry,
      maxAttempts: Math.max(1, Math.floor(setting(options, 'maxTransferAttempts', 5))),
      signal: options.signal,
    };
  }

  /**
   * This client with `options` in place of its own (as openai-node's withOptions): same key,
   * settings, rate limiter and connection pool, which stays the original's to close.
   */
  withOptions(options: RequestOptions): TrainingServiceClient {
    return new TrainingServiceClient({
      ...this.#options,
      ...options,
      dispatcher: this.#transport.dispatcher,
    });
  }

  /** Closes the client's own connection pool (not an injected dispatcher). */
  async close(): Promise<void> {
    await this.#ownAgent?.close();
  }

  // ---- Datasets -------------------------------------------------------------------------------

  /**
   * POST /v1/datasets. Not idempotent, so retried only when the failure proves the request was
   * not processed (as startTraining): after any other transient failure the dataset may exist,
   * and the caller finds it by name (findDataset) rather than leave an orphan at the service.
   */
  async createDataset(input: NewDataset): Promise<Dataset> {
    // Only the fields of docs/service-contract.md, B2 (JSON leaves out a content_type not given).
    const files = input.files.map(({ name, bytes, content_type }) => ({ name, bytes, content_type }));
    return this.#record('createDataset', {}, DatasetSchema, { body: { name: input.name, files } });
  }

  /** GET /v1/datasets/{id}; also issues a fresh upload_url for every pending file. */
  async getDataset(datasetId: string): Promise<Dataset> {
    return this.#record('getDataset', { dataset: datasetId }, DatasetSchema);
  }

  listDatasets(params: ListParams = {}): CursorList<Dataset> {
    return this.#list('listDatasets', params, DatasetSchema);
  }

  /**
   * The newest dataset named `name` created since `askedAt` (less DATASET_CLOCK_SKEW_MS), read
   * through the paged list newest first, or null. The interface has no idempotency key: a run
   * whose creation answer was lost finds its dataset so (runDatasetName), before it creates again.
   */
  async findDataset(name: string, askedAt: number): Promise<Dataset | null> {
    const notBefore = askedAt - DATASET_CLOCK_SKEW_MS;
    for await (const dataset of this.listDatasets({ limit: 100 })) {
      // Newest first: past this one, every dataset is older than the ask.
      if (Date.parse(dataset.created_at) < notBefore) return null;
      if (dataset.name === name) return dataset;
    }
    return null;
  }

  /** POST .../files/{file}/complete once the bytes are uploaded. Idempotent. */
  async completeFile(datasetId: string, fileId: string): Promise<Dataset> {
    return this.#record('completeFile', { dataset: datasetId, file: fileId }, DatasetSchema);
  }

  /**
   * Streams one file's bytes to its presigned URL (no Authorization header, Content-Length of
   * the declared size, never buffered), then completes it. `openSource` is called once per
   * attempt: a failed transfer is sent again whole from a fresh stream; an expired URL is
   * replaced by GET dataset. Returns the dataset record answered by complete.
   */
  async uploadFile(datasetId: string, file: DatasetFile, openSource: OpenSource): Promise<Dataset> {
    await uploadFileBytes(this.#transfer, {
      file,
      openSource,
      freshUploadUrl: async () => {
        const dataset = await this.getDataset(datasetId);
        const index = dataset.files.findIndex((candidate) => candidate.id === file.id);
        const current = dataset.files[index];
        const label = endpointLabel(ENDPOINTS.getDataset);
        const unexpected = (fieldPath: string, what: string) =>
          unexpectedResponse(label, 200, fieldPath, `${label}: ${what}`);
        if (current === undefined) throw unexpected('files', `no file with id ${file.id}`);
        if (current.status !== FILE_STATUS.pending) return undefined;
        if (current.upload_url === null)
          throw unexpected(`files[${index}].upload_url`, 'a pending file without URL');
        return current.upload_url;
      },
    });
    return this.completeFile(datasetId, file.id);
  }

  /** POST .../suggest: the decisions the service suggests; the dataset moves to pick_decisions. */
  async suggest(datasetId: string): Promise<Suggestions> {
    return this.#record('suggest', { dataset: datasetId }, SuggestionsSchema);
  }

  /**
   * POST .../structure with the answers given (none: the service's own choices). Retried on
   * transient failures. A retry after an ambiguous failure (dropped connection, timeout, 5xx)
   * that is answered 409 conflict may mean the first attempt took effect: then the dataset is
   * read, and if it has moved past structure (isPastStructure, contract.ts) the call succeeds
   * with that record.
   */
  async structure(datasetId: string, answers?: readonly StructureAnswer[]): Promise<Dataset> {
    // An object, not a boolean: the flag is set from a callback, beyond the compiler's flow analysis.
    const retried = { afterAmbiguousFailure: false };
    try {
      return await this.#record('structure', { dataset: datasetId }, DatasetSchema, {
        body: structureBody(answers),
        hooks: {
          onRetry: (error) => {
            retried.afterAmbiguousFailure ||= mayHaveActed(error);
          },
        },
      });
    } catch (error) {
      if (!retried.afterAmbiguousFailure || !(error instanceof ConflictError)) throw error;
      const dataset = await this.getDataset(datasetId);
      if (!isPastStructure(dataset)) throw error;
      this.#retry.logger.warn(
        `${endpointLabel(ENDPOINTS.structure)}: 409 after an ambiguous failure; it had succeeded`,
      );
      return dataset;
    }
  }

  /** GET .../labels/next: the next held-out example to label, or null when none is left (204). */
  async nextLabelTask(datasetId: string): Promise<LabelTask | null> {
    const answer = await this.#call('nextLabelTask', { dataset: datasetId });
    return answer.status === 204 ? null : this.#parse('nextLabelTask', LabelTaskSchema, answer);
  }

  /** POST .../labels/{task}. Idempotent: the same label again is accepted. */
  async submitLabel(datasetId: string, task: string, label: string): Promise<LabelResult> {
    return this.#record('submitLabel', { dataset: datasetId, task }, LabelResultSchema, { body: { label } });
  }

  // ---- Encoders and models ----------------------------------------------------------------------

  async listEncoders(): Promise<Encoder[]> {
    return (await this.#record('listEncoders', {}, EncoderListSchema)).data;
  }

  /** The encoder the service marks default (the first, should it mark several). */
  async defaultEncoder(): Promise<Encoder> {
    const encoders = await this.listEncoders();
    const chosen = encoders.find((encoder) => encoder.default);
    if (chosen === undefined) {
      const endpoint = endpointLabel(ENDPOINTS.listEncoders);
      throw unexpectedResponse(endpoint, 200, 'data', `${endpoint}: no encoder is marked default`);
    }
    return chosen;
  }

  /**
   * POST /v1/datasets/{id}/models: starts a training and SPENDS A CREDIT. Not idempotent, so it
   * is retried only when the failure proves the request was not processed (429; connection
   * refused before anything was sent). Any other transient failure (dropped connection,
   * timeout, 5xx) is thrown with `retryable: true` although the training may have started:
   * before calling again, the caller must reconcile by looking for a model of the dataset
   * created by the lost call (`modelsOfDataset`), or it may pay twice.
   */
  async startTraining(datasetId: string, encoder: string): Promise<Model> {
    return this.#record('startTraining', { dataset: datasetId }, ModelSchema, { body: { encoder } });
  }

  async getModel(modelId: string): Promise<Model> {
    return this.#record('getModel', { model: modelId }, ModelSchema);
  }

  listModels(params: ListParams = {}): CursorList<Model> {
    return this.#list('listModels', params, ModelSchema);
  }

  /** The models of one dataset, newest first (B10: lists have no dataset filter; this pages and filters). */
  async *modelsOfDataset(datasetId: string, options: ModelsOfDatasetOptions = {}): AsyncGenerator<Model> {
    const notBefore =
      options.datasetCreatedAt === undefined ? undefined : Date.parse(options.datasetCreatedAt);
    for await (const model of this.listModels({ limit: 100 })) {
      if (notBefore !== undefined && Date.parse(model.created_at) < notBefore) return;
      if (model.dataset_id === datasetId) yield model;
    }
  }

  /** GET /v1/models/{id}/download: a presigned link valid 15 minutes, never past files_expire_at. */
  async getDownloadLink(modelId: string): Promise<DownloadLink> {
    return this.#record('getDownloadLink', { model: modelId }, DownloadLinkSchema);
  }

  /**
   * A Readable of the model file, for piping (e.g. into an S3 multipart upload): gets a link,
   * streams with backpressure, resumes with Range after a failure mid-body, replaces an expired
   * link, fails with FilesExpiredError when the files are gone and with SizeMismatchError when
   * the size differs from Content-Length or `expectedBytes`. Requests start at the first read.
   */
  downloadModel(modelId: string, options: DownloadOptions = {}): Readable {
    return downloadStream(this.#transfer, {
      freshLink: () => this.getDownloadLink(modelId),
      expectedBytes: options.expectedBytes,
      from: options.from,
    });
  }

  // ---- Plumbing ---------------------------------------------------------------------------------

  async #call(name: EndpointName, params: Params, options: CallOptions = {}): Promise<JsonAnswer> {
    const endpoint = ENDPOINTS[name];
    const label = endpointLabel(endpoint);
    const search = new URLSearchParams(options.query ?? {}).toString();
    const url = `${this.baseUrl}${pathOf(endpoint, params)}${search === '' ? '' : `?${search}`}`;
    const signal = this.#signal;
    // Waiting for the rate limiter's turn is not the service failing: the call's retry budget
    // does not count it.
    let queuedMs = 0;
    const retry: RetrySettings = { ...this.#retry, now: () => this.#retry.now() - queuedMs };
    return withRetries(
      label,
      endpoint.retry,
      retry,
      async () => {
        const asked = Date.now();
        await this.#limiter.acquire();
        queuedMs += Date.now() - asked;
        try {
          return await exchangeJson(this.#transport, {
            method: endpoint.method,
            url,
            endpoint: label,
            headers: { authorization: `Bearer ${this.#apiKey}` },
            body: options.body,
            signal,
          });
        } catch (error) {
          if (error instanceof RateLimitedError) this.#limiter.throttled();
          throw error;
        }
      },
      { ...options.hooks, signal },
    );
  }

  async #record<T extends z.ZodType>(
    name: EndpointName,
    params: Params,
    schema: T,
    options: CallOptions = {},
  ): Promise<z.output<T>> {
    return this.#parse(name, schema, await this.#call(name, params, options));
  }

  #parse<T extends z.ZodType>(name: EndpointName, schema: T, answer: JsonAnswer): z.output<T> {
    const label = endpointLabel(ENDPOINTS[name]);
    return parseBody(schema, answer.body, label, answer.status, this.#transport.redact);
  }

  #list<T extends z.ZodType>(
    name: 'listDatasets' | 'listModels',
    params: ListParams,
    item: T,
  ): CursorList<z.output<T>> {
    listQuery(params, undefined); // Reject a bad limit now rather than at the first read.
    const schema = pageSchema(item);
    return new CursorList(endpointLabel(ENDPOINTS[name]), (cursor) =>
      this.#record(name, {}, schema, { query: listQuery(params, cursor) }),
    );
  }
}
