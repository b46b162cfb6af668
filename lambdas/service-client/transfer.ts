/**
 * Streaming file transfers to and from presigned URLs (docs/service-contract.md, B2 and B8): never with the Authorization
 * header, never holding a whole file in memory, each bounded in attempts.
 */
import { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import {
  FILE_DOWNLOAD_LABEL,
  FILE_UPLOAD_LABEL,
  rangeHeader,
  UPLOAD_CONTENT_TYPE,
  type DatasetFile,
  type DownloadLink,
} from './contract.js';
import {
  ConflictError,
  ConnectionError,
  DeadlineError,
  ServiceError,
  SizeMismatchError,
  TimeoutError,
  unexpectedResponse,
  UrlExpiredError,
} from './errors.js';
import { describeTarget, exchangeStream, headerOf, toServiceError, type Transport } from './http.js';
import { deadlineError, pause, retryDelayMs, type RetrySettings } from './retry.js';

export interface TransferSettings {
  readonly transport: Transport;
  readonly retry: RetrySettings;
  /** Attempts of one upload; for a download, failed attempts in a row without a byte of progress. */
  readonly maxAttempts: number;
  /** The deadline of every transfer: an abort stops it (body included) with a DeadlineError. */
  readonly signal?: AbortSignal | undefined;
}

/** Opens the bytes of a file from the start; called once per attempt. */
export type OpenSource = () => Readable | Promise<Readable>;

export interface UploadJob {
  readonly file: DatasetFile;
  readonly openSource: OpenSource;
  /** A fresh upload URL for the file (GET dataset), or undefined when it is no longer pending. */
  readonly freshUploadUrl: () => Promise<string | undefined>;
}

/**
 * True when undici refused to send a body whose length is not the Content-Length given: the
 * source had other bytes than the file's declared size (the object changed after validation).
 */
export function isBodyLengthMismatch(error: unknown): boolean {
  return error instanceof Error && 'code' in error && error.code === 'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH';
}

/**
 * PUTs the file's bytes with a Content-Length of its declared size. A failed transfer is sent
 * again whole from a fresh source; an expired URL is replaced. Returns when the service holds
 * the bytes, or the file turns out to be uploaded and completed already.
 */
export async function uploadFileBytes(settings: TransferSettings, job: UploadJob): Promise<void> {
  const { signal } = settings;
  let url = job.file.upload_url ?? undefined;
  let lastError: unknown;
  for (let attempt = 1; attempt <= settings.maxAttempts; attempt++) {
    if (signal?.aborted === true) throw deadlineError(FILE_UPLOAD_LABEL, lastError);
    url ??= await job.freshUploadUrl();
    if (url === undefined) return;
    const source = await job.openSource();
    let sourceError: unknown;
    const onSourceError = (error: unknown) => {
      sourceError ??= error;
    };
    source.on('error', onSourceError);
    try {
      const response = await exchangeStream(settings.transport, {
        method: 'PUT',
        url,
        endpoint: FILE_UPLOAD_LABEL,
        headers: { 'content-length': String(job.file.bytes), 'content-type': UPLOAD_CONTENT_TYPE },
        body: source,
        signal,
      });
      await response.body.dump();
      return;
    } catch (error) {
      if (error instanceof DeadlineError) throw error;
      if (sourceError !== undefined) {
        lastError = sourceError; // The caller's stream failed: a fresh one may not.
      } else if (error instanceof UrlExpiredError) {
        lastError = error;
        url = undefined;
        settings.retry.logger.warn(
          `${FILE_UPLOAD_LABEL} ${job.file.name}: url_expired; fetching a fresh URL`,
        );
        continue;
      } else if (error instanceof ConflictError) {
        return; // The file was uploaded and completed before (an earlier run): complete is idempotent.
      } else if (error instanceof ServiceError && error.retryable) {
        lastError = error;
      } else {
        throw error;
      }
      if (attempt < settings.maxAttempts) {
        const delayMs =
          lastError instanceof ServiceError ? retryDelayMs(lastError, attempt - 1, settings.retry) : 0;
        settings.retry.logger.warn(
          `${FILE_UPLOAD_LABEL} ${job.file.name}: attempt ${attempt} of ${settings.maxAttempts} failed; ` +
            `sending it again in ${delayMs} ms`,
        );
        if (!(await pause(settings.retry, delayMs, signal)))
          throw deadlineError(FILE_UPLOAD_LABEL, lastError);
      }
    } finally {
      // The listener stays: a late 'error' from the discarded source must not go unhandled.
      source.destroy();
    }
  }
  throw lastError;
}

/**
 * The slowest download not cut: a download attempt that receives fewer bytes than this per second
 * over a whole `transport.timeoutMs` is cut as too slow (a TimeoutError), and counts as an attempt
 * without progress, so a link that trickles ends within `maxAttempts` windows instead of holding
 * the call until its deadline. Far below any real link's speed, far above a connection that
 * trickles a byte at a time.
 */
const MIN_BYTES_PER_SECOND = 8 * 1024;

export interface DownloadJob {
  /** A fresh download link (GET /v1/models/{model}/download, with its own retries). */
  readonly freshLink: () => Promise<DownloadLink>;
  /** Size the file must have (the model's onnx_bytes), checked against Content-Length. */
  readonly expectedBytes?: number | undefined;
  /** The first byte wanted (a copy that resumes): asked for with Range from the first request. */
  readonly from?: number | undefined;
}

/**
 * A Readable of the file behind a download link, pulled only as fast as it is read. After a
 * failure mid-body it resumes with `Range: bytes=N-`; an expired link is replaced; a 410
 * (files gone) or a size that differs from the expected one is thrown. Nothing is requested
 * before the first read.
 */
export function downloadStream(settings: TransferSettings, job: DownloadJob): Readable {
  return Readable.from(downloadChunks(settings, job), { objectMode: false });
}

/** How far a download has got: bytes passed on, and the file's size once known. */
interface DownloadProgress {
  received: number;
  total: number | undefined;
}

async function* downloadChunks(settings: TransferSettings, job: DownloadJob): AsyncGenerator<Buffer> {
  const { transport, retry, maxAttempts, signal } = settings;
  const progress: DownloadProgress = { received: job.from ?? 0, total: job.expectedBytes };
  let link: DownloadLink | undefined;
  let failuresInARow = 0;
  for (;;) {
    if (signal?.aborted === true) throw deadlineError(FILE_DOWNLOAD_LABEL);
    link ??= await job.freshLink();
    const from = progress.received;
    try {
      yield* downloadAttempt(settings, link, progress);
      return;
    } catch (caught) {
      const target = describeTarget('GET', link.url);
      const error = toServiceError(caught, FILE_DOWNLOAD_LABEL, target, false, transport, signal);
      if (error instanceof DeadlineError) throw error;
      if (!(error instanceof ServiceError) || !(error.retryable || error instanceof UrlExpiredError))
        throw error;
      // An attempt that passed bytes on resets the count, unless it was cut for trickling them.
      const progressed = progress.received > from;
      failuresInARow = progressed && !(error instanceof TooSlowError) ? 1 : failuresInARow + 1;
      if (failuresInARow >= maxAttempts) throw error;
      const at = `at byte ${String(progress.received)}`;
      if (error instanceof UrlExpiredError) {
        link = undefined;
        retry.logger.warn(`${FILE_DOWNLOAD_LABEL}: url_expired ${at}; fetching a fresh link`);
        continue;
      }
      const delayMs = retryDelayMs(error, failuresInARow - 1, retry);
      retry.logger.warn(
        `${FILE_DOWNLOAD_LABEL}: ${error.code} ${at}; resuming (attempt ${String(failuresInARow + 1)} of ${String(maxAttempts)}) in ${String(delayMs)} ms`,
      );
      if (!(await pause(retry, delayMs, signal))) throw deadlineError(FILE_DOWNLOAD_LABEL, error);
    }
  }
}

/**
 * One GET of the link from byte `progress.received` (a Range request after the first), its
 * chunks passed on as they arrive; throws where the answer or the body goes wrong.
 */
async function* downloadAttempt(
  settings: TransferSettings,
  link: DownloadLink,
  progress: DownloadProgress,
): AsyncGenerator<Buffer> {
  const { transport, signal } = settings;
  const endpoint = FILE_DOWNLOAD_LABEL;
  const headers: Record<string, string> =
    progress.received > 0 ? { range: rangeHeader(progress.received) } : {};
  const response = await exchangeStream(transport, {
    method: 'GET',
    url: link.url,
    endpoint,
    headers,
    signal,
  });
  try {
    const target = describeTarget('GET', link.url);
    const status = response.statusCode;
    const answer = answerRange(response, target);
    if (progress.total !== undefined && answer.total !== progress.total) {
      const message = `${target}: the file has ${String(answer.total)} bytes, ${String(progress.total)} were expected`;
      throw new SizeMismatchError({ message, endpoint, status });
    }
    if (answer.start > progress.received) {
      const message = `${target}: asked for bytes from ${String(progress.received)}, got bytes from ${String(answer.start)}`;
      throw unexpectedResponse(endpoint, status, 'content-range', message);
    }
    const total = answer.total;
    progress.total = total;
    // A 200 to a Range request is the whole file again: skip what was already passed on.
    let skip = progress.received - answer.start;
    const pace = speedFloor(settings, target);
    for await (const data of response.body as AsyncIterable<Buffer>) {
      pace.check(data.length, status);
      const dropped = Math.min(skip, data.length);
      skip -= dropped;
      const chunk = dropped === 0 ? data : data.subarray(dropped);
      if (chunk.length === 0) continue;
      if (progress.received + chunk.length > total) {
        const message = `${target}: more than the ${String(total)} bytes announced`;
        throw new SizeMismatchError({ message, endpoint, status });
      }
      progress.received += chunk.length;
      yield chunk;
    }
    if (progress.received === total) return;
    const message = `${target}: the body ended after ${String(progress.received)} of ${String(total)} bytes`;
    throw new ConnectionError({ message, endpoint, requestSent: true });
  } finally {
    discard(response.body);
  }
}

/** Releases a body that may not have been read to its end (undici then reports an abort: expected). */
function discard(body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => undefined);
  body.destroy();
}

interface RangeAnswer {
  /** Offset of the first byte of the body in the file. */
  readonly start: number;
  /** Size of the whole file. */
  readonly total: number;
}

/** Where the body starts and the file's size, from a 200 (Content-Length) or 206 (Content-Range). */
function answerRange({ statusCode: status, headers }: Dispatcher.ResponseData, target: string): RangeAnswer {
  const unexpected = (fieldPath: string, what: string) =>
    unexpectedResponse(FILE_DOWNLOAD_LABEL, status, fieldPath, `${target}: ${what}`);
  if (status === 206) {
    const match = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(headerOf(headers, 'content-range') ?? '');
    if (match === null) throw unexpected('content-range', 'a 206 answer without a complete Content-Range');
    return { start: Number(match[1]), total: Number(match[3]) };
  }
  if (status !== 200) throw unexpected('', `unexpected status ${status}`);
  const length = headerOf(headers, 'content-length');
  if (length === undefined || !/^\d+$/.test(length)) {
    throw unexpected('content-length', 'a 200 answer without Content-Length');
  }
  return { start: 0, total: Number(length) };
}

/** A download attempt cut for being slower than MIN_BYTES_PER_SECOND. */
class TooSlowError extends TimeoutError {}

/**
 * Watches an attempt's pace: each window of `timeoutMs` must bring at least
 * `MIN_BYTES_PER_SECOND * timeoutMs / 1000` bytes. (A window with no byte at all is undici's
 * bodyTimeout; this catches a body that keeps trickling.)
 */
function speedFloor(
  settings: TransferSettings,
  target: string,
): { check(bytes: number, status: number): void } {
  const windowMs = settings.transport.timeoutMs;
  const floor = (MIN_BYTES_PER_SECOND * windowMs) / 1000;
  let windowStart = performance.now();
  let windowBytes = 0;
  return {
    check(bytes, status) {
      windowBytes += bytes;
      if (performance.now() - windowStart < windowMs) return;
      if (windowBytes < floor) {
        const message = `${target}: ${String(windowBytes)} bytes arrived in ${String(windowMs)} ms, slower than ${String(MIN_BYTES_PER_SECOND)} bytes/s: the download trickles`;
        throw new TooSlowError({ message, endpoint: FILE_DOWNLOAD_LABEL, status, requestSent: true });
      }
      windowStart = performance.now();
      windowBytes = 0;
    },
  };
}
