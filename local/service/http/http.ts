/**
 * Small HTTP helpers shared by the API and file servers: answers, bounded body reading,
 * path matching, strict validation of parsed input, and handlers that never crash the server.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { z } from 'zod';
import { invalidRequest, ServiceError } from '../domain/index.js';

/** An answer not yet written: handlers return it so a fault can still drop or delay it. */
export interface Reply {
  status: number;
  /** JSON body; undefined means no body (204). */
  body?: unknown;
  headers?: Record<string, string>;
}

/** Waits `ms`, or less when the service closes. */
export type Sleep = (ms: number) => Promise<void>;

export function errorReply({ status, code, message, headers }: ServiceError): Reply {
  return { status, body: { error: code, message }, headers };
}

/** Writes a reply; a socket the client already closed is ignored. */
export function sendReply(res: ServerResponse, reply: Reply): void {
  if (res.destroyed || res.headersSent) return;
  for (const [name, value] of Object.entries(reply.headers ?? {})) res.setHeader(name, value);
  if (reply.body === undefined) {
    res.writeHead(reply.status);
    res.end();
    return;
  }
  const text = JSON.stringify(reply.body);
  res.writeHead(reply.status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(text),
  });
  res.end(text);
}

/**
 * Writes `chunks` in turn as fast as the client takes them (the next made only once the one
 * before has gone to the response); stops once the client is gone. The caller ends the answer.
 */
export async function writeChunks(res: ServerResponse, chunks: Iterable<Buffer>): Promise<void> {
  // Not in object mode: the source holds one chunk ahead, not sixteen.
  const source = Readable.from(chunks, { objectMode: false });
  // A client gone midway rejects (premature close): there is no one left to answer.
  await pipeline(source, res, { end: false }).catch(() => undefined);
}

/** Largest JSON body the API accepts (a dataset of 1000 files fits comfortably). */
export const MAX_JSON_BODY_BYTES = 1024 * 1024;

/** Reads the whole (small) body, refusing more than `maxBytes`. */
export async function readSmallBody(req: IncomingMessage, maxBytes = MAX_JSON_BODY_BYTES): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > maxBytes) {
    throw invalidRequest(`request body larger than ${maxBytes} bytes`);
  }
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (total > maxBytes) throw invalidRequest(`request body larger than ${maxBytes} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * Parses a POST body that must be a JSON object. With `allowEmpty`, an empty body counts as `{}`
 * (complete and suggest take no body).
 */
export function parseJsonObject(raw: Buffer, allowEmpty: boolean): Record<string, unknown> {
  const text = raw.toString('utf8');
  if (text.trim() === '') {
    if (allowEmpty) return {};
    throw invalidRequest('request body must be a JSON object');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalidRequest('request body is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalidRequest('request body must be a JSON object');
  }
  return value as Record<string, unknown>;
}

/** Validates with a zod schema; the first issue becomes a 400 invalid_request naming the field. */
export function validate<S extends z.ZodType>(schema: S, value: unknown, what: string): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const where = issue && issue.path.length > 0 ? `${what}.${issue.path.join('.')}` : what;
  throw invalidRequest(`${where}: ${issue?.message ?? 'invalid'}`);
}

/** Query string as a plain object; a repeated parameter is refused (it has no meaning here). */
export function queryObject(url: URL): Record<string, string> {
  const query: Record<string, string> = {};
  for (const [name, value] of url.searchParams) {
    if (Object.hasOwn(query, name)) throw invalidRequest(`query parameter ${name} given more than once`);
    query[name] = value;
  }
  return query;
}

/**
 * Matches a path template ('/v1/datasets/{dataset}', as contract.ts writes them) against a path;
 * returns the named segments or undefined. Segments are percent-decoded; a segment that does not
 * decode does not match.
 */
export function matchPath(template: string, path: string): Record<string, string> | undefined {
  const want = template.split('/');
  const got = path.split('/');
  if (want.length !== got.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const expected = want[i] ?? '';
    const actual = got[i] ?? '';
    const name = /^\{(\w+)\}$/.exec(expected)?.[1];
    if (name !== undefined) {
      if (actual === '') return undefined;
      try {
        params[name] = decodeURIComponent(actual);
      } catch {
        return undefined;
      }
    } else if (expected !== actual) {
      return undefined;
    }
  }
  return params;
}

/** Parses the request target; a malformed one yields undefined (answered 404). */
export function requestUrl(req: IncomingMessage): URL | undefined {
  try {
    return new URL(req.url ?? '/', 'http://service.invalid');
  } catch {
    return undefined;
  }
}

/** A handler bug still gets a well-formed 500 (and a line on stderr to find it by). */
export function asServiceError(error: unknown): ServiceError {
  if (error instanceof ServiceError) return error;
  console.error('simulated service: unexpected failure', error);
  return new ServiceError('server_error', 'internal error');
}

/** Runs a request handler; an unexpected rejection drops the connection rather than crash. */
export function guarded(
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    handle(req, res).catch((error: unknown) => {
      console.error('simulated service: unexpected failure', error);
      req.socket.destroy();
    });
  };
}
