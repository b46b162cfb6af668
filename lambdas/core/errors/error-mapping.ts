/**
 * Turns whatever a step threw into a RunError: the service client's errors by kind, S3's by
 * whether AWS marks them retryable, anything else as a final internal error. Steps that can say
 * something more precise (a missing drop file, a label the service refuses) throw their own
 * RunError first; this is the fallback, so every failure reaches the status file with a code.
 */
import { S3ServiceException } from '@aws-sdk/client-s3';
import {
  ServiceError,
  UnsupportedNextActionError,
  type ServiceErrorCode,
} from '../../service-client/errors.js';
import type { RunErrorCode } from './codes.js';
import { messageOf, RunError } from './errors.js';
import {
  noCreditsMessage,
  unknownEncoderMessage,
  unsupportedNextActionMessage,
  s3UnreachableMessage,
  unexpectedFailureMessage,
  s3AnsweredMessage,
} from './messages.js';

export function toRunError(error: unknown): RunError {
  if (error instanceof RunError) return error;
  if (error instanceof ServiceError) return fromServiceError(error);
  if (error instanceof S3ServiceException) return fromS3Error(error);
  if (isAwsRetryable(error)) {
    return new RunError('storage_error', s3UnreachableMessage(messageOf(error)), {
      retryable: true,
      cause: error,
    });
  }
  return new RunError('internal_error', unexpectedFailureMessage(messageOf(error)), { cause: error });
}

/** A service error's run error: its code, its words, and whether the state machine retries it. */
type Mapped = readonly [code: RunErrorCode, detail: string, retryable?: boolean];

/** The service errors a run says more about than "refused" or "did not answer"; all final but one. */
const SERVICE_FAILURES: Partial<Record<ServiceErrorCode, (error: ServiceError) => Mapped>> = {
  unauthorized: (error) => [
    'unauthorized',
    `the training service refused the API key (${error.endpoint} answered ${String(error.status ?? 401)}; the key may have been rotated): put a valid key in Hopper's API key secret (or pass --api-key in local mode), then resume the run (hopper retry <drop>)`,
  ],
  unexpected_response: (error) => [
    'unexpected_response',
    `the training service sent an answer Hopper cannot use, and asking again would not help: ${error.message}. The service is not answering as its interface says; report it to the service, then resume the run (hopper retry <drop>)`,
  ],
  retry_later: (error) => [
    'service_busy',
    `the training service asked Hopper to stay away longer than a step waits: ${error.message}. Resume the run later (hopper retry <drop>)`,
  ],
  no_credits: () => ['no_credits', noCreditsMessage()],
  unknown_encoder: (error) => [
    'unknown_encoder',
    unknownEncoderMessage({ encoder: null, reason: error.message }),
  ],
  unsupported_next_action: (error) => [
    'unsupported_next_action',
    unsupportedNextActionMessage(
      error instanceof UnsupportedNextActionError ? error.nextAction : error.message,
      `the answer to ${error.endpoint}`,
    ),
  ],
  // Retried by the state machine with a fresh invocation's time.
  deadline_exceeded: (error) => [
    'step_timeout',
    `the step ran out of time before the training service answered: ${error.message}`,
    true,
  ],
};

function fromServiceError(error: ServiceError): RunError {
  const [code, detail, retryable = false] =
    SERVICE_FAILURES[error.code]?.(error) ??
    (error.retryable
      ? ['service_unavailable', `the training service did not answer: ${error.message}`, true]
      : ['service_error', `the training service refused a request: ${error.message}`]);
  return new RunError(code, detail, { retryable, cause: error });
}

function fromS3Error(error: S3ServiceException): RunError {
  const retryable = error.$retryable !== undefined || (error.$metadata.httpStatusCode ?? 0) >= 500;
  return new RunError('storage_error', s3AnsweredMessage(error.name, error.message), {
    retryable,
    cause: error,
  });
}

/** Network failures of the AWS SDK carry `$retryable` without being S3ServiceExceptions. */
function isAwsRetryable(error: unknown): boolean {
  return typeof error === 'object' && error !== null && '$retryable' in error;
}
