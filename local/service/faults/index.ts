/**
 * Fault injection: which FaultRule fires for a request (injector.ts), how the misbehaviour kinds
 * (named with FaultRule in options.ts) spoil an answer (misbehaviour.ts), the
 * maxRequestsPerSecond limit (rate-limit.ts), and where in a request's life each of them acts
 * (pipeline.ts: RequestGate, answer).
 *
 * It must not change the domain's records: a fault decides how a request is answered (or not),
 * before or after its handler ran, never what the handler does. It must not import endpoints/.
 */
export { FAULT_DEFAULTS } from './injector.js';
export { LIST_ENDPOINTS, misbehavedReply, trickle } from './misbehaviour.js';
export { answer, beforeAnswer, RequestGate } from './pipeline.js';
export { RequestRateLimit } from './rate-limit.js';
