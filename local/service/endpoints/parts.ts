/**
 * What every handler is given: the running service's parts and the request its route admitted.
 * Types only, so that serve.ts, context.ts and presigned.ts all import them from below.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ServiceState } from '../domain/index.js';
import type { RequestGate } from '../faults/index.js';
import type { InFlightGauge, Signer, Sleep } from '../http/index.js';
import type { EndpointName, FaultRule } from '../options.js';

/** The parts of a running service the servers work on (server.ts puts them together). */
export interface ServiceParts {
  readonly state: ServiceState;
  readonly gate: RequestGate;
  readonly signer: Signer;
  /** PUTs to upload URLs being served at once. */
  readonly uploadsInFlight: InFlightGauge;
  readonly sleep: Sleep;
}

/** A request its route's handler takes on. */
export interface Admitted<E extends EndpointName> {
  readonly endpoint: E;
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: URL;
  /** Named path segments ('{dataset}' -> params.dataset). */
  readonly params: Record<string, string>;
  /** The fault that fired for this request, if any (drop and error kinds are handled before). */
  readonly fault: FaultRule | undefined;
}
