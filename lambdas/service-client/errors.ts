/**
 * One error class per failure kind. Every error has a stable `code`, the HTTP `status` when
 * there was an answer, and `retryable`: whether sending the same request again may succeed.
 * No error ever holds the API key: messages are redacted where they are built, and no request
 * headers are kept.
 */
import {
  errorKindForStatus,
  errorKindOfCode,
  TRANSIENT_STATUSES,
  type ServiceErrorKind,
} from './contract.js';

/**
 * The client's error codes: one per error class. Not Hopper's run error codes (RunErrorCode in
 * lambdas/core/errors/errors.ts), which lambdas/core/errors/error-mapping.ts derives from these.
 */
export type ServiceErrorCode =
  | ServiceErrorKind
  | 'connection_error'
  | 'timeout'
  | 'garbled_answer'
  | 'retry_later'
  | 'deadline_exceeded'
  | 'unexpected_response'
  | 'unsupported_next_action';

export interface ServiceErrorInit {
  readonly message: string;
  /** `GET /v1/datasets/{dataset}`, or the name of a presigned-URL transfer. */
  readonly endpoint: string;
  readonly status?: number | undefined;
  /** The code the service sent, when it differs from the class's code or the class was chosen by status. */
  readonly serviceCode?: string | undefined;
  readonly retryable?: boolean;
  readonly retryAfterMs?: number | undefined;
  /** For a failure of the transport (ServiceError.requestSent). */
  readonly requestSent?: boolean | undefined;
  readonly cause?: unknown;
}

export abstract class ServiceError extends Error {
  abstract override readonly name: string;
  abstract readonly code: ServiceErrorCode;
  readonly endpoint: string;
  /** HTTP status of the answer; undefined when none arrived (transport failures). */
  readonly status: number | undefined;
  readonly serviceCode: string | undefined;
  readonly retryable: boolean;
  /** How long the service asked the client to wait (Retry-After), in ms. */
  readonly retryAfterMs: number | undefined;
  /**
   * Set when no usable answer arrived (a TransportErrorInit's error): false only when the failure
   * proves no byte of the request left (connection refused, DNS failure, connect timeout), and
   * then even a non-idempotent request may be sent again.
   */
  readonly requestSent: boolean | undefined;

  constructor(init: ServiceErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.endpoint = init.endpoint;
    this.status = init.status;
    this.serviceCode = init.serviceCode;
    this.retryable = init.retryable ?? false;
    this.retryAfterMs = init.retryAfterMs;
    this.requestSent = init.requestSent;
  }
}

/** What a failure of the transport (no usable answer arrived) is made with. */
export type TransportErrorInit = ServiceErrorInit & { readonly requestSent: boolean };

/**
 * The class of one kind of failure, its errors made with `Init` and, unless it says otherwise,
 * `defaults`.
 */
function errorClass<C extends ServiceErrorCode, Init extends ServiceErrorInit = ServiceErrorInit>(
  name: string,
  code: C,
  defaults: Partial<ServiceErrorInit> = {},
) {
  return class extends ServiceError {
    override readonly name = name;
    override readonly code = code;
    constructor(init: Init) {
      super({ ...defaults, ...init });
    }
  };
}

// Answers of the service (docs/service-contract.md, B9).
export class InvalidRequestError extends errorClass('InvalidRequestError', 'invalid_request') {}
export class InvalidLabelError extends errorClass('InvalidLabelError', 'invalid_label') {}
export class UnknownEncoderError extends errorClass('UnknownEncoderError', 'unknown_encoder') {}
/** The body's length differs from the declared size (service answer, or caught by the client). */
export class SizeMismatchError extends errorClass('SizeMismatchError', 'size_mismatch') {}
export class UnauthorizedError extends errorClass('UnauthorizedError', 'unauthorized') {}
export class NoCreditsError extends errorClass('NoCreditsError', 'no_credits') {}
export class UrlExpiredError extends errorClass('UrlExpiredError', 'url_expired') {}
export class NotFoundError extends errorClass('NotFoundError', 'not_found') {}
export class ConflictError extends errorClass('ConflictError', 'conflict') {}
export class NotReadyError extends errorClass('NotReadyError', 'not_ready') {}
export class NotUploadedError extends errorClass('NotUploadedError', 'not_uploaded') {}
export class FilesExpiredError extends errorClass('FilesExpiredError', 'files_expired') {}
export class RateLimitedError extends errorClass('RateLimitedError', 'rate_limited') {}
export class ServerError extends errorClass('ServerError', 'server_error') {}
export class UnavailableError extends errorClass('UnavailableError', 'unavailable') {}

/**
 * The class of a failure of the transport: no usable answer arrived, the connection failed or the
 * wait ran out. Always retryable.
 */
function transportErrorClass<C extends ServiceErrorCode>(name: string, code: C) {
  return errorClass<C, TransportErrorInit>(name, code, { retryable: true });
}

export class ConnectionError extends transportErrorClass('ConnectionError', 'connection_error') {}
export class TimeoutError extends transportErrorClass('TimeoutError', 'timeout') {}
/**
 * The caller's deadline (the client's `signal`; in Lambda, the invocation's remaining time) came
 * before the call could finish, its retries included. Retryable, but not under the same deadline:
 * the client stops at once, and the caller tries again with fresh time (the state machine's Retry).
 */
export class DeadlineError extends transportErrorClass('DeadlineError', 'deadline_exceeded') {}
/**
 * A 2xx answer whose body is not the JSON it should be (cut short, empty): mangled in transit,
 * after the service may have acted (contract.ts, "Answers garbled in transit"). Retryable as a
 * lost connection is: the request was sent, so only a request safe to repeat is sent again.
 */
export class GarbledAnswerError extends transportErrorClass('GarbledAnswerError', 'garbled_answer') {}

/**
 * The service asked to be left alone (Retry-After) for longer than the client waits in a call
 * (`maxRetryAfterMs`): final for this call; a caller that can wait (a poll) may come back after
 * `retryAfterMs`.
 */
export class RetryLaterError extends errorClass('RetryLaterError', 'retry_later') {}

// The answer arrived but the client cannot use it.
export class UnexpectedResponseError extends errorClass('UnexpectedResponseError', 'unexpected_response') {
  /** Path of the offending field in the body, e.g. `files[0].upload_url`; '' for the body itself. */
  readonly fieldPath: string;
  constructor(init: ServiceErrorInit & { readonly fieldPath: string }) {
    super(init);
    this.fieldPath = init.fieldPath;
  }
}

/** The UnexpectedResponseError of `endpoint`'s answer `status`, about its field at `fieldPath`. */
export function unexpectedResponse(
  endpoint: string,
  status: number,
  fieldPath: string,
  message: string,
): UnexpectedResponseError {
  return new UnexpectedResponseError({ message, endpoint, status, fieldPath });
}

/** A record asks for a next_action Hopper does not know: it cannot drive the flow further. */
export class UnsupportedNextActionError extends errorClass(
  'UnsupportedNextActionError',
  'unsupported_next_action',
) {
  readonly nextAction: string;
  constructor(init: Omit<ServiceErrorInit, 'message'> & { readonly nextAction: string }) {
    super({ ...init, message: `unsupported next_action: ${init.nextAction}` });
    this.nextAction = init.nextAction;
  }
}

type AnswerErrorClass = new (init: ServiceErrorInit) => ServiceError;

const CLASS_BY_KIND: Readonly<Record<ServiceErrorKind, AnswerErrorClass>> = {
  invalid_request: InvalidRequestError,
  invalid_label: InvalidLabelError,
  unknown_encoder: UnknownEncoderError,
  size_mismatch: SizeMismatchError,
  unauthorized: UnauthorizedError,
  no_credits: NoCreditsError,
  url_expired: UrlExpiredError,
  not_found: NotFoundError,
  conflict: ConflictError,
  not_ready: NotReadyError,
  not_uploaded: NotUploadedError,
  files_expired: FilesExpiredError,
  rate_limited: RateLimitedError,
  server_error: ServerError,
  unavailable: UnavailableError,
};

export interface ErrorAnswer {
  readonly endpoint: string;
  /** Method and path actually requested (no query string), for the message. */
  readonly target: string;
  readonly status: number;
  /** `error` of the body, if it had one. */
  readonly serviceCode: string | undefined;
  /** `message` of the body (already redacted), if it had one. */
  readonly serviceMessage: string | undefined;
  readonly retryAfterMs: number | undefined;
}

/**
 * The error for an error answer: by its code when the client knows it, else by its status.
 * Retryable when the status is transient (B9), whatever the code.
 */
export function errorFromAnswer(answer: ErrorAnswer): ServiceError {
  const kind =
    (answer.serviceCode !== undefined ? errorKindOfCode(answer.serviceCode) : undefined) ??
    errorKindForStatus(answer.status);
  const code = answer.serviceCode ?? 'no error code';
  const detail = answer.serviceMessage === undefined ? '' : `: ${answer.serviceMessage}`;
  const init: ServiceErrorInit = {
    message: `${answer.target}: ${answer.status} ${code}${detail}`,
    endpoint: answer.endpoint,
    status: answer.status,
    serviceCode: answer.serviceCode,
    retryable: TRANSIENT_STATUSES.has(answer.status),
    retryAfterMs: answer.retryAfterMs,
  };
  if (kind === undefined) return new UnexpectedResponseError({ ...init, fieldPath: '' });
  return new CLASS_BY_KIND[kind](init);
}
