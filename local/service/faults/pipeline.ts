/**
 * Where faults act in a request's life, on either server: at admission (the request is counted,
 * rate-limited, then a rule may drop it or answer it before any side effect) and at the answer
 * (dropped after processing, delayed, or mangled on the way).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ServiceErrorKind } from '../../../lambdas/service-client/contract.js';
import { mulberry32, ServiceError } from '../domain/index.js';
import { errorReply, sendReply, type Reply, type Sleep } from '../http/index.js';
import type { EndpointName, FaultRule, SimulatedServiceOptions } from '../options.js';
import { FAULT_DEFAULTS, FaultInjector } from './injector.js';
import { earlyMisbehaviour, isFileEndpoint, sendMisbehaving } from './misbehaviour.js';
import { RequestRateLimit } from './rate-limit.js';

/** The error answers of the fault kinds that answer instead of processing the request. */
const FAULT_ANSWERS: Partial<Record<FaultRule['kind'], readonly [ServiceErrorKind, string]>> = {
  '429': ['rate_limited', 'rate limited (simulated)'],
  '500': ['server_error', 'internal error (simulated)'],
  '503': ['unavailable', 'service unavailable (simulated)'],
  expire: ['url_expired', 'the URL has expired (simulated)'],
};

/** The answer a fault gives instead of processing the request, if its kind gives one. */
function faultReply(fault: FaultRule): Reply | undefined {
  const answer = FAULT_ANSWERS[fault.kind];
  if (answer === undefined) return undefined;
  const seconds = fault.retryAfterSeconds ?? FAULT_DEFAULTS.retryAfterSeconds;
  const headers: Record<string, string> = fault.kind === '429' ? { 'Retry-After': String(seconds) } : {};
  return errorReply(new ServiceError(...answer, { headers }));
}

/** What admit decided: the request was answered by a fault, or goes on (with the fault, if any). */
export type Admission = { answered: true } | { answered: false; fault: FaultRule | undefined };

/** The first stop of every request on either server, and the knobs it follows. */
export class RequestGate {
  readonly injector: FaultInjector;
  /** The maxRequestsPerSecond knob at work. */
  readonly rateLimit = new RequestRateLimit();
  readonly #counts = new Map<EndpointName, number>();

  constructor(options: SimulatedServiceOptions) {
    this.injector = new FaultInjector(options.faults, mulberry32(options.seed));
    this.rateLimit.setLimit(options.maxRequestsPerSecond);
  }

  /** Follows configure(`changes`), `knobs` being all of them after it. */
  configure(changes: Partial<SimulatedServiceOptions>, knobs: SimulatedServiceOptions): void {
    if (changes.faults !== undefined) this.injector.setRules(knobs.faults);
    this.rateLimit.setLimit(knobs.maxRequestsPerSecond);
    if (changes.seed !== undefined) this.injector.setRandom(mulberry32(knobs.seed));
  }

  /** Requests seen per endpoint, faulted and rate-limited ones included. */
  requestCount(endpoint: EndpointName): number {
    return this.#counts.get(endpoint) ?? 0;
  }

  /**
   * Counts a request to `endpoint`, answers 429 when it is over the rate limit
   * (maxRequestsPerSecond), then lets a fault rule drop it ('drop') or answer it before any side
   * effect ('429', '500', '503', 'expire', 'redirect', sent by `send`). Other fault kinds act
   * later and are handed on.
   */
  admit(endpoint: EndpointName, req: IncomingMessage, send: (reply: Reply) => void): Admission {
    this.#counts.set(endpoint, this.requestCount(endpoint) + 1);
    // Presigned transfers go to storage, not the API: the rate limit does not count them.
    const retryAfterSeconds = isFileEndpoint(endpoint) ? undefined : this.rateLimit.take();
    if (retryAfterSeconds !== undefined) {
      const headers = { 'Retry-After': String(retryAfterSeconds) };
      send(
        errorReply(new ServiceError('rate_limited', 'too many requests: over the rate limit', { headers })),
      );
      return { answered: true };
    }
    const fault = this.injector.pick(endpoint);
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
