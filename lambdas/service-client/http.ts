/**
 * One HTTP exchange with undici, and the mapping of everything that can go wrong to the
 * client's errors. No retries here (retry.ts), no knowledge of endpoints (client.ts).
 */
import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { request, type RequestOptions } from './undici.js';
import type * as z from 'zod';
import { isKnownNextAction, MAX_ANSWER_BYTES, NOT_SENT_ERROR_CODES } from './contract.js';
import {
  ConnectionError,
  DeadlineError,
  errorFromAnswer,
  GarbledAnswerError,
  ServiceError,
  SizeMismatchError,
  TimeoutError,
  unexpectedResponse,
  UnsupportedNextActionError,
} from './errors.js';
import { parseRetryAfterMs, type Logger } from './retry.js';

export interface Transport {
  readonly dispatcher: Dispatcher;
  readonly timeoutMs: number;
  readonly logger: Logger;
  /** Removes the API key from any text that may come back from the wire. */
  readonly redact: (text: string) => string;
}

export function makeRedactor(secret: string): (text: string) => string {
  return (text) => (secret === '' ? text : text.split(secret).join('[redacted]'));
}

type Headers = Record<string, string>;

/** A URL without its query string, for messages: presigned URLs carry signatures there. */
export function describeTarget(method: string, url: string): string {
  const parsed = new URL(url);
  return `${method} ${parsed.origin}${parsed.pathname}`;
}

/** One request: to the API (JSON, serialized from `body`) or to a presigned URL (a stream). */
interface Exchange<Method extends string, Body> {
  readonly method: Method;
  readonly url: string;
  /** Stable endpoint name, for errors and logs. */
  readonly endpoint: string;
  readonly headers: Headers;
  readonly body?: Body;
  /** The call's deadline: aborts the exchange (a stream's body included) with a DeadlineError. */
  readonly signal?: AbortSignal | undefined;
}

export interface JsonAnswer {
  readonly status: number;
  /** Parsed JSON, or undefined for 204. */
  readonly body: unknown;
}

/**
 * One request to the API, whole answer read, within `timeoutMs` from start to last byte.
 * Throws a ServiceError for an error answer or a transport failure.
 */
export async function exchangeJson(
  transport: Transport,
  exchange: Exchange<'GET' | 'POST', unknown>,
): Promise<JsonAnswer> {
  const { endpoint, body } = exchange;
  const target = describeTarget(exchange.method, exchange.url);
  const deadline = new AbortController();
  const timer = setTimeout(() => {
    deadline.abort();
  }, transport.timeoutMs);
  const signal =
    exchange.signal === undefined ? deadline.signal : AbortSignal.any([deadline.signal, exchange.signal]);
  const json: Headers = body === undefined ? {} : { 'content-type': 'application/json' };
  const headers: Headers = { accept: 'application/json', ...exchange.headers, ...json };
  // What had arrived when the deadline struck: a body that trickles in is told from no answer.
  const arrived = { status: undefined as number | undefined, bytes: 0 };
  try {
    const text = body === undefined ? undefined : JSON.stringify(body);
    const response = await send(transport, { ...exchange, headers, body: text, signal }, target);
    arrived.status = response.statusCode;
    const answer = await readAnswer(response, endpoint, target, arrived);
    transport.logger.debug(`${target} -> ${String(response.statusCode)}`);
    const status = response.statusCode;
    if (status < 200 || status > 299) throw statusError(transport, endpoint, target, response, answer);
    return { status, body: status === 204 ? undefined : parseJson(answer, endpoint, target, status) };
  } catch (error) {
    const tooSlow = deadline.signal.aborted && exchange.signal?.aborted !== true;
    if (tooSlow && arrived.status !== undefined && !(error instanceof ServiceError)) {
      const message = `${target}: answer ${String(arrived.status)} too slow: ${String(arrived.bytes)} bytes of its body arrived within ${String(transport.timeoutMs)} ms`;
      throw new TimeoutError({ message, endpoint, status: arrived.status, requestSent: true, cause: error });
    }
    throw toServiceError(error, endpoint, target, deadline.signal.aborted, transport, exchange.signal);
  } finally {
    clearTimeout(timer);
  }
}

/** undici's request of `exchange`, its waits for headers and for data bounded by `timeoutMs`. */
function send(
  transport: Transport,
  exchange: Pick<RequestOptions, 'method' | 'headers' | 'body' | 'signal'> & { readonly url: string },
  target: string,
): Promise<Dispatcher.ResponseData> {
  transport.logger.debug(target);
  const { url, method, headers, body, signal } = exchange;
  const timeouts = { headersTimeout: transport.timeoutMs, bodyTimeout: transport.timeoutMs };
  return request(url, { dispatcher: transport.dispatcher, method, headers, body, signal, ...timeouts });
}

/**
 * The whole body as text, refusing one larger than MAX_ANSWER_BYTES (by its Content-Length, or
 * as it arrives) so a runaway answer cannot exhaust a Lambda's memory.
 */
async function readAnswer(
  response: Dispatcher.ResponseData,
  endpoint: string,
  target: string,
  arrived: { bytes: number },
): Promise<string> {
  const status = response.statusCode;
  const tooLarge = () => {
    response.body.destroy();
    const message = `${target}: answer ${status} is larger than ${MAX_ANSWER_BYTES} bytes, the most an answer of the service can hold`;
    return unexpectedResponse(endpoint, status, '', message);
  };
  const declared = Number(response.headers['content-length']);
  if (Number.isFinite(declared) && declared > MAX_ANSWER_BYTES) throw tooLarge();
  const chunks: Buffer[] = [];
  for await (const chunk of response.body as AsyncIterable<Buffer>) {
    arrived.bytes += chunk.length;
    if (arrived.bytes > MAX_ANSWER_BYTES) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The first value of a header undici may give as several. */
export function headerOf(headers: Dispatcher.ResponseData['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The error for an answer outside 2xx whose body is `text`: an error answer (answerError), or a
 * 1xx or 3xx the client does not expect; it follows no redirect (contract.ts, "Redirects").
 */
function statusError(
  transport: Pick<Transport, 'redact'>,
  endpoint: string,
  target: string,
  { statusCode: status, headers }: Dispatcher.ResponseData,
  text: string,
): ServiceError {
  if (status >= 400) return answerError(transport, endpoint, target, status, headers, text);
  const location = headerOf(headers, 'location');
  const redirect =
    status >= 300 && status <= 399
      ? `: redirected${location === undefined ? '' : ` to ${describeLocation(location, target)}`}, and Hopper follows no redirect; check the service URL`
      : '';
  const message = `${target}: unexpected status ${status}${redirect}`;
  return unexpectedResponse(endpoint, status, '', message);
}

/** A redirect's Location without its query string (it could carry a signature). */
function describeLocation(location: string, target: string): string {
  const base = target.slice(target.indexOf(' ') + 1);
  if (!URL.canParse(location, base)) return 'an address that is not a URL';
  const url = new URL(location, base);
  return `${url.origin}${url.pathname}`;
}

/** A 2xx body that is not JSON was mangled on the way (truncated, empty, a proxy's page). */
function parseJson(text: string, endpoint: string, target: string, status: number): unknown {
  try {
    return JSON.parse(text);
  } catch {
    const what = text.trim() === '' ? 'is empty' : 'is not JSON (cut short or mangled in transit)';
    const message = `${target}: answer ${status} ${what}`;
    throw new GarbledAnswerError({ message, endpoint, status, requestSent: true });
  }
}

const MAX_SERVICE_MESSAGE_CHARS = 500;

/** The error for an error answer whose body is `text`. */
export function answerError(
  transport: Pick<Transport, 'redact'>,
  endpoint: string,
  target: string,
  status: number,
  headers: Dispatcher.ResponseData['headers'],
  text: string,
): ServiceError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not the shape of docs/service-contract.md, B9 (a proxy's page, say): the status alone decides the class.
  }
  const { error, message } = (parsed ?? {}) as { error?: unknown; message?: unknown };
  return errorFromAnswer({
    endpoint,
    target,
    status,
    serviceCode: typeof error === 'string' ? transport.redact(error) : undefined,
    serviceMessage:
      typeof message === 'string' ? transport.redact(message).slice(0, MAX_SERVICE_MESSAGE_CHARS) : undefined,
    retryAfterMs: parseRetryAfterMs(headerOf(headers, 'retry-after'), Date.now()),
  });
}

function errorCodeOf(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

/** True when `error` proves no byte of the request was sent. */
function provesNotSent(error: unknown): boolean {
  const code = errorCodeOf(error);
  if (code !== undefined && NOT_SENT_ERROR_CODES.has(code)) return true;
  // Happy-eyeballs connects fail with an AggregateError of one error per address.
  return error instanceof AggregateError && error.errors.length > 0 && error.errors.every(provesNotSent);
}

/** Sockets closing, resets, a body cut short, a malformed answer: the request may have been acted on. */
function isConnectionFailure(code: string): boolean {
  return (
    /^E[A-Z]+$/.test(code) ||
    code.startsWith('HPE_') ||
    code === 'UND_ERR_SOCKET' ||
    code === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH'
  );
}

/**
 * The ServiceError for anything thrown during an exchange, or `error` itself when it is not a
 * transport failure (a bug, or the caller's own upload source failing). Whatever failed once the
 * call's `deadline` has aborted is a DeadlineError: the abort is what cut it short.
 */
export function toServiceError(
  error: unknown,
  endpoint: string,
  target: string,
  timedOut: boolean,
  transport: Pick<Transport, 'redact' | 'timeoutMs'>,
  deadline?: AbortSignal,
): unknown {
  if (error instanceof ServiceError) return error;
  const code = errorCodeOf(error);
  const failure = { endpoint, cause: error };
  if (deadline?.aborted === true) {
    const message = `${target}: the call's deadline passed before an answer`;
    return new DeadlineError({ ...failure, message, requestSent: !provesNotSent(error) });
  }
  if (timedOut || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    const message = `${target}: no answer within ${transport.timeoutMs} ms`;
    return new TimeoutError({ ...failure, message, requestSent: true });
  }
  if (code === 'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH') {
    const message = `${target}: the body's length differs from the declared Content-Length`;
    return new SizeMismatchError({ ...failure, message });
  }
  const sent = !provesNotSent(error);
  if (!sent || (code !== undefined && isConnectionFailure(code))) {
    const detail = transport.redact(error instanceof Error ? error.message : String(error));
    const message = `${target}: ${sent ? 'connection failed' : 'could not connect'} (${detail})`;
    return new ConnectionError({ ...failure, message, requestSent: sent });
  }
  return error;
}

/** Validates a body against `schema`: UnexpectedResponseError, or UnsupportedNextActionError. */
export function parseBody<T extends z.ZodType>(
  schema: T,
  body: unknown,
  endpoint: string,
  status: number,
  redact: (text: string) => string = (text) => text,
): z.output<T> {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const path = issue?.path ?? [];
  const last = path[path.length - 1];
  const value = valueAt(body, path);
  if (last === 'next_action' && typeof value === 'string' && !isKnownNextAction(value)) {
    throw new UnsupportedNextActionError({ endpoint, status, nextAction: redact(value) });
  }
  const fieldPath = formatPath(path);
  const message = `${endpoint}: unexpected answer: ${fieldPath === '' ? 'body' : fieldPath}: ${issue?.message ?? 'invalid'}`;
  throw unexpectedResponse(endpoint, status, fieldPath, message);
}

/** `files[0].upload_url`, `decisions.dedupe`: how a user finds the value in the body or file. */
export function formatPath(path: readonly PropertyKey[]): string {
  let text = '';
  for (const key of path) {
    if (typeof key === 'number') text += `[${key}]`;
    else text += text === '' ? String(key) : `.${String(key)}`;
  }
  return text;
}

/** The value at `path` in `body`, or undefined when there is none. */
export function valueAt(body: unknown, path: readonly PropertyKey[]): unknown {
  let value = body;
  for (const key of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/**
 * A request to a presigned URL (never with the Authorization header). Streams have no overall
 * deadline (a large file takes its time): `timeoutMs` bounds each wait for headers or data.
 * Returns the response for a 2xx answer, whose body the caller must consume or destroy.
 */
export async function exchangeStream(
  transport: Transport,
  exchange: Exchange<'GET' | 'PUT', Readable>,
): Promise<Dispatcher.ResponseData> {
  const target = describeTarget(exchange.method, exchange.url);
  try {
    const response = await send(transport, exchange, target);
    transport.logger.debug(`${target} -> ${response.statusCode}`);
    if (response.statusCode >= 200 && response.statusCode <= 299) return response;
    throw statusError(transport, exchange.endpoint, target, response, await response.body.text());
  } catch (error) {
    throw toServiceError(error, exchange.endpoint, target, false, transport, exchange.signal);
  }
}
