/**
 * Error answers of the service (contract B9): every error is `{"error": code, "message": text}`
 * with the status its code implies.
 */
export const ERROR_STATUS = {
  invalid_request: 400,
  invalid_label: 400,
  unknown_encoder: 400,
  size_mismatch: 400,
  unauthorized: 401,
  no_credits: 402,
  url_expired: 403,
  not_found: 404,
  conflict: 409,
  not_ready: 409,
  not_uploaded: 409,
  files_expired: 410,
  rate_limited: 429,
  server_error: 500,
  unavailable: 503,
} as const;

/** The simulated service's wire codes (`{"error": code}`). */
export type WireErrorCode = keyof typeof ERROR_STATUS;

/** Thrown by handlers; the pipeline turns it into the error answer. */
export class ServiceError extends Error {
  readonly status: number;
  readonly code: string;
  readonly headers: Record<string, string>;

  /** `status` overrides the one the code implies, for answers the contract gives no code of their own. */
  constructor(
    code: WireErrorCode,
    message: string,
    { headers = {}, status = ERROR_STATUS[code] }: { headers?: Record<string, string>; status?: number } = {},
  ) {
    super(message);
    this.name = 'ServiceError';
    this.status = status;
    this.code = code;
    this.headers = headers;
  }
}

export const invalidRequest = (message: string): ServiceError => new ServiceError('invalid_request', message);
export const notFound = (message: string): ServiceError => new ServiceError('not_found', message);
export const conflict = (message: string): ServiceError => new ServiceError('conflict', message);
