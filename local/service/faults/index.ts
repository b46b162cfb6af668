/**
 * Fault injection: which FaultRule fires for a request (injector.ts), the misbehaviour kinds and
 * how they spoil an answer (misbehaviour.ts), the maxRequestsPerSecond limit (rate-limit.ts),
 * and where in a request's life each of them acts (pipeline.ts).
 *
 * It must not change the domain's records: a fault decides how a request is answered (or not),
 * before or after the handler ran, never what the handler does.
 */
export { FaultInjector, FAULT_DEFAULTS } from './injector.js';
export { RequestRateLimit } from './rate-limit.js';
