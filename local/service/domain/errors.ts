/**
 * Error answers of the service (docs/service-contract.md, B9): every error is `{"error": code, "message": text}`
 * with the status its code implies (ERROR_STATUS, which the client's contract.ts owns).
 */
import { ERROR_STATUS, type ServiceErrorKind } from '../../../lambdas/service-client/contract.js';

/** Thrown by handlers; the pipeline turns it into the error answer. */
export class ServiceError extends Error {
  override readonly name = 'ServiceError';
  readonly status: number;
  readonly headers: Record<string, string>;

  /** `status` overrides the one the code implies, for answers the contract gives no code of their own. */
  constructor(
    readonly code: ServiceErrorKind,
    message: string,
    { headers = {}, status = ERROR_STATUS[code] }: { headers?: Record<string, string>; status?: number } = {},
  ) {
    super(message);
    this.status = status;
    this.headers = headers;
  }
}

export const invalidRequest = (message: string): ServiceError => new ServiceError('invalid_request', message);
export const notFound = (message: string): ServiceError => new ServiceError('not_found', message);
export const conflict = (message: string): ServiceError => new ServiceError('conflict', message);
