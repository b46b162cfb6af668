/**
 * Pieces of the request pipeline shared by the API and file servers: the answers faults give,
 * the last step (answer, or drop/delay it), and turning failures into error answers.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ServiceError } from '../domain/errors.js';
import { FAULT_DEFAULTS } from './injector.js';
import { errorReply, sendReply, type Reply } from '../http/http.js';
import { earlyMisbehaviour, sendMisbehaving } from './misbehaviour.js';
import type { EndpointName, FaultRule } from '../options.js';
import type { ServiceState } from '../domain/state.js';

/** Waits `ms`, or less when the service closes. */
export type Sleep = (ms: number) => Promise<void>;

/** The answer a fault gives instead of processing the request, if its kind gives one. */
function faultReply(fault: FaultRule): Reply | undefined {
  switch (fault.kind) {
    case '429': {
      const seconds = fault.retryAfterSeconds ?? FAULT_DEFAULTS.retryAfterSeconds;
      const headers = { 'Retry-After': String(seconds) };
      return errorReply(new ServiceError('rate_limited', 'rate limited (simulated)', { headers }));
    }
    case '500':
      return errorReply(new ServiceError('server_error', 'internal error (simulated)'));
    case '503':
      return errorReply(new ServiceError('unavailable', 'service unavailable (simulated)'));
    case 'expire':
      return errorReply(new ServiceError('url_expired', 'the URL has expired (simulated)'));
    default:
      return undefined;
  }
}

/** Presigned transfers go to storage, not the API: the rate limit does not count them. */
const FILE_ENDPOINTS: readonly EndpointName[] = ['fileUpload', 'fileDownload'];

/** What admitRequest decided: the request was answered by a fault, or goes on (with the fault, if any). */
export type Admission = { answered: true } | { answered: false; fault: FaultRule | undefined };

/**
 * The first step for a request to `endpoint` on either server: count it, answer 429 when it is
 * over the rate limit (maxRequestsPerSecond), then let a fault rule drop it ('drop') or answer it
 * before any side effect ('429', '500', '503', 'expire', 'redirect', sent by `send`).
 * Other fault kinds act later and are handed on.
 */
export function admitRequest(
  state: ServiceState,
  endpoint: EndpointName,
  req: IncomingMessage,
  send: (reply: Reply) => void,
): Admission {
  state.count(endpoint);
  const retryAfterSeconds = FILE_ENDPOINTS.includes(endpoint) ? undefined : state.rateLimit.take();
  if (retryAfterSeconds !== undefined) {
    const headers = { 'Retry-After': String(retryAfterSeconds) };
    send(errorReply(new ServiceError('rate_limited', 'too many requests: over the rate limit', { headers })));
    return { answered: true };
  }
  const fault = state.faults.pick(endpoint);
  if (fault?.kind === 'drop') {
    req.socket.destroy();
    return { answered: true };
  }
  const early = fault && (faultReply(fault) ?? earlyMisbehaviour(fault, req));
  if (early !== undefined) {
    send(early);
    return { answered: true };
  }
  return { answered: false, fault };
}

/** A handler bug still gets a well-formed 500 (and a line on stderr to find it by). */
export function asServiceError(error: unknown): ServiceError {
  if (error instanceof ServiceError) return error;
  console.error('simulated service: unexpected failure', error);
  return new ServiceError('server_error', 'internal error');
}

/**
 * Ends a request whose work is done: 'drop_after' destroys the socket instead of answering,
 * 'stall' answers `stallMs` late, otherwise the reply goes out now (answer() lets a misbehaviour
 * mangle it on the way). Returns false when no answer is to be sent.
 */
export async function beforeAnswer(
  req: IncomingMessage,
  fault: FaultRule | undefined,
  sleep: Sleep,
): Promise<boolean> {
  if (fault?.kind === 'drop_after') {
    req.socket.destroy();
    return false;
  }
  if (fault?.kind === 'stall') await sleep(fault.stallMs ?? FAULT_DEFAULTS.stallMs);
  return true;
}

export async function answer(
  req: IncomingMessage,
  res: ServerResponse,
  reply: Reply,
  fault: FaultRule | undefined,
  sleep: Sleep,
): Promise<void> {
  if (!(await beforeAnswer(req, fault, sleep)) || res.destroyed || res.headersSent) return;
  if (!(await sendMisbehaving(res, reply, fault, sleep))) sendReply(res, reply);
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
