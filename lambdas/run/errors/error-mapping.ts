/**
 * Turns whatever a step threw into a RunError: the service client's errors by kind, S3's by
 * whether AWS marks them retryable, anything else as a final internal error. Steps that can say
 * something more precise (a missing drop file, a label the service refuses) throw their own
 * RunError first; this is the fallback, so every failure reaches the status file with a code.
 */
import { S3ServiceException } from '@aws-sdk/client-s3';
import {
  DeadlineError,
  NoCreditsError,
  RetryLaterError,
  ServiceError,
  UnauthorizedError,
  UnexpectedResponseError,
  UnknownEncoderError,
  UnsupportedNextActionError,
} from '../../service-client/errors.js';
import { messageOf, RunError } from './errors.js';
import { noCreditsMessage, unknownEncoderMessage, unsupportedNextActionMessage } from './messages.js';

export function toRunError(error: unknown): RunError {
  if (error instanceof RunError) return error;
  if (error instanceof ServiceError) return fromServiceError(error);
  if (error instanceof S3ServiceException) return fromS3Error(error);
  if (isAwsRetryable(error)) {
    return new RunError('storage_error', `S3 could not be reached: ${messageOf(error)}`, {
      retryable: true,
      cause: error,
    });
  }
  return new RunError('internal_error', `Hopper failed unexpectedly: ${messageOf(error)}`, { cause: error });
}

function fromServiceError(error: ServiceError): RunError {
  if (error instanceof UnauthorizedError) {
    return new RunError(
      'unauthorized',
      `the training service refused the API key (${error.endpoint} answered ${String(error.status ?? 401)}; the key may have been rotated): put a valid key in Hopper's API key secret (or pass --api-key in local mode), then resume the run (hopper retry <drop>)`,
      { cause: error },
    );
  }
  if (error instanceof UnexpectedResponseError) {
    return new RunError(
      'unexpected_response',
      `the training service sent an answer Hopper cannot use, and asking again would not help: ${error.message}. The service is not answering as its interface says; report it to the service, then resume the run (hopper retry <drop>)`,
      { cause: error },
    );
  }
  if (error instanceof RetryLaterError) {
    return new RunError(
      'service_busy',
      `the training service asked Hopper to stay away longer than a step waits: ${error.message}. Resume the run later (hopper retry <drop>)`,
      { cause: error },
    );
  }
  if (error instanceof NoCreditsError) {
    return new RunError('no_credits', noCreditsMessage(), { cause: error });
  }
  if (error instanceof UnknownEncoderError) {
    return new RunError('unknown_encoder', unknownEncoderMessage({ encoder: null, reason: error.message }), {
      cause: error,
    });
  }
  if (error instanceof UnsupportedNextActionError) {
    return new RunError(
      'unsupported_next_action',
      unsupportedNextActionMessage(error.nextAction, `the answer to ${error.endpoint}`),
      { cause: error },
    );
  }
  if (error instanceof DeadlineError) {
    // Retried by the state machine with a fresh invocation's time.
    return new RunError(
      'step_timeout',
      `the step ran out of time before the training service answered: ${error.message}`,
      { retryable: true, cause: error },
    );
  }
  if (error.retryable) {
    return new RunError('service_unavailable', `the training service did not answer: ${error.message}`, {
      retryable: true,
      cause: error,
    });
  }
  return new RunError('service_error', `the training service refused a request: ${error.message}`, {
    cause: error,
  });
}

function fromS3Error(error: S3ServiceException): RunError {
  const retryable = error.$retryable !== undefined || (error.$metadata.httpStatusCode ?? 0) >= 500;
  return new RunError('storage_error', `S3 answered ${error.name}: ${error.message}`, {
    retryable,
    cause: error,
  });
}

/** Network failures of the AWS SDK carry `$retryable` without being S3ServiceExceptions. */
function isAwsRetryable(error: unknown): boolean {
  return typeof error === 'object' && error !== null && '$retryable' in error;
}
