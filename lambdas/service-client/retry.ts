/**
 * Capped exponential backoff with full jitter, Retry-After, and the retry loop. Pure apart
 * from the injected `sleep` and `random`, so tests drive it without waiting.
 */
import { once } from 'node:events';
import type { RetryPolicy } from './contract.js';
import { DeadlineError, RetryLaterError, ServiceError } from './errors.js';

export interface Logger {
  debug(message: string): void;
  warn(message: string): void;
}

export const SILENT_LOGGER: Logger = { debug: () => undefined, warn: () => undefined };

export interface RetrySettings {
  /** Retries after the first attempt. */
  readonly maxRetries: number;
  readonly backoffBaseMs: number;
  readonly backoffCapMs: number;
  /** A Retry-After longer than this is not waited for: the call fails with RetryLaterError. */
  readonly maxRetryAfterMs: number;
  /**
   * No retry starts later than this many ms after the call's first attempt began (Infinity: no
   * such bound), so a call ends within this plus one attempt's timeout however the service fails.
   */
  readonly callBudgetMs: number;
  /** Milliseconds since the epoch; injected so tests can move time. */
  readonly now: () => number;
  /** Resolves after `ms`; may end early (and reject) when `signal` aborts. */
  readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Uniform in [0, 1). */
  readonly random: () => number;
  readonly logger: Logger;
}

/** Full jitter: a uniform delay in [0, min(cap, base * 2^retryIndex)), retryIndex counted from 0. */
export function backoffDelayMs(
  retryIndex: number,
  settings: Pick<RetrySettings, 'backoffBaseMs' | 'backoffCapMs' | 'random'>,
): number {
  // 2 ** large overflows to Infinity, which min() with the cap handles.
  const ceiling = Math.min(settings.backoffCapMs, settings.backoffBaseMs * 2 ** retryIndex);
  return Math.floor(settings.random() * ceiling);
}

/**
 * Retry-After in ms: delta-seconds (`120`) or an HTTP date (`Wed, 21 Oct 2015 07:28:00 GMT`,
 * relative to `nowMs`, 0 if already past). Undefined when absent or unreadable.
 */
export function parseRetryAfterMs(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  // An HTTP date names a weekday; this keeps Date.parse from reading stray numbers as dates.
  if (!/^[A-Za-z]{3},/.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

function retryLater(label: string, error: ServiceError, maxRetryAfterMs: number): RetryLaterError {
  const seconds = (ms: number) => String(Math.ceil(ms / 1000));
  return new RetryLaterError({
    message: `${label}: the service asked to be called again in ${seconds(error.retryAfterMs ?? 0)} s (Retry-After on a ${String(error.status ?? 'failed')} answer), longer than a call waits (${seconds(maxRetryAfterMs)} s)`,
    endpoint: error.endpoint,
    status: error.status,
    serviceCode: error.serviceCode,
    retryAfterMs: error.retryAfterMs,
    cause: error,
  });
}

/**
 * The wait before retry number `retryIndex` (from 0) after `error`: its Retry-After (capped) plus
 * a full-jitter backoff, never earlier than the service asked, and spread so that the clients it
 * refused together (other Lambda containers) do not all come back at the same instant; the
 * full-jitter backoff alone without Retry-After.
 */
export function retryDelayMs(
  error: ServiceError,
  retryIndex: number,
  settings: Pick<RetrySettings, 'backoffBaseMs' | 'backoffCapMs' | 'random' | 'maxRetryAfterMs'>,
): number {
  const jitter = backoffDelayMs(retryIndex, settings);
  if (error.retryAfterMs !== undefined)
    return Math.min(error.retryAfterMs, settings.maxRetryAfterMs) + jitter;
  return jitter;
}

/**
 * Whether the service may have acted on a request that failed with `error`: the request left
 * and no answer came (dropped connection, timeout), or a 5xx came, which does not say the work
 * was not done. A 429 and a connection refused before sending prove nothing happened.
 */
export function mayHaveActed(error: ServiceError): boolean {
  if (error.requestSent !== undefined) return error.requestSent;
  return error.status !== undefined && error.status >= 500;
}

/** Whether the service answered the request with a refusal (4xx): it acted on nothing. */
export function wasRefused(error: ServiceError): boolean {
  return error.status !== undefined && error.status >= 400 && error.status < 500;
}

/** Whether `error` may be answered by sending the request again under `policy`. */
export function mayRetry(error: ServiceError, policy: RetryPolicy): boolean {
  if (!error.retryable) return false;
  // 'unprocessed': only what proves the service did not act on the request.
  return policy === 'transient' || !mayHaveActed(error);
}

export interface RetryHooks {
  /** Called with each failure about to be retried (not with the last one). */
  readonly onRetry?: (error: ServiceError) => void;
  /**
   * The call's deadline: once it aborts no attempt starts and no wait goes on, and the call
   * fails with a DeadlineError (see deadlineError).
   */
  readonly signal?: AbortSignal | undefined;
}

/**
 * The error of a call whose deadline came first; `last` is the failure it was about to retry,
 * if any. The request may have been acted on when an attempt had left (mayHaveActed).
 */
export function deadlineError(label: string, last?: unknown): DeadlineError {
  if (last instanceof DeadlineError) return last;
  const why = last instanceof ServiceError ? ` after ${last.code}` : '';
  return new DeadlineError({
    message: `${label}: the call's deadline passed${why}; not retried within this invocation`,
    endpoint: label,
    requestSent: last instanceof ServiceError ? (last.requestSent ?? true) : false,
    cause: last,
  });
}

/** Read through a call: the compiler would keep a narrowing of `signal.aborted` across awaits. */
export function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

/**
 * Waits `ms` with `settings.sleep`; false, at once, when `signal` aborts first (an injected
 * sleep need not watch the signal itself).
 */
export async function pause(
  settings: Pick<RetrySettings, 'sleep'>,
  ms: number,
  signal?: AbortSignal,
): Promise<boolean> {
  if (signal === undefined) return settings.sleep(ms).then(() => true);
  if (signal.aborted) return false;
  const stopListening = new AbortController();
  // Settles when the signal aborts (false), or when the pause is over and stops listening.
  const aborted = once(signal, 'abort', { signal: stopListening.signal }).catch(() => undefined);
  const slept = settings.sleep(ms, signal).then(
    () => !signal.aborted,
    (error: unknown) => {
      if (signal.aborted) return false;
      throw error;
    },
  );
  try {
    return await Promise.race([slept, aborted.then(() => false)]);
  } finally {
    stopListening.abort();
  }
}

/**
 * Runs `attempt` until it succeeds, fails with an error `policy` does not retry, or retries are
 * used up; then throws the last error. Errors that are not ServiceErrors (bugs) are not retried.
 */
export async function withRetries<T>(
  label: string,
  policy: RetryPolicy,
  settings: RetrySettings,
  attempt: () => Promise<T>,
  hooks: RetryHooks = {},
): Promise<T> {
  const startedAt = settings.now();
  const { signal } = hooks;
  if (isAborted(signal)) throw deadlineError(label);
  for (let retryIndex = 0; ; retryIndex++) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof ServiceError) || !mayRetry(error, policy)) throw error;
      if (error.retryAfterMs !== undefined && error.retryAfterMs > settings.maxRetryAfterMs) {
        // Coming back sooner than asked would only be refused again.
        throw retryLater(label, error, settings.maxRetryAfterMs);
      }
      if (retryIndex >= settings.maxRetries) throw error;
      // Past the deadline nothing is retried here: the caller has no time left to wait for it.
      if (isAborted(signal)) throw deadlineError(label, error);
      const delayMs = retryDelayMs(error, retryIndex, settings);
      if (settings.now() - startedAt + delayMs >= settings.callBudgetMs) {
        settings.logger.warn(
          `${label}: ${error.code}; no retry: the call's ${String(settings.callBudgetMs)} ms budget is spent`,
        );
        throw error;
      }
      settings.logger.warn(
        `${label}: ${error.code}${error.status === undefined ? '' : ` (${error.status})`}; ` +
          `retry ${retryIndex + 1} of ${settings.maxRetries} in ${delayMs} ms`,
      );
      hooks.onRetry?.(error);
      if (!(await pause(settings, delayMs, signal))) throw deadlineError(label, error);
    }
  }
}
