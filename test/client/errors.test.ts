import { describe, expect, it } from 'vitest';
import {
  ConflictError,
  ConnectionError,
  FilesExpiredError,
  InvalidLabelError,
  InvalidRequestError,
  NoCreditsError,
  NotFoundError,
  NotReadyError,
  NotUploadedError,
  RateLimitedError,
  ServerError,
  SizeMismatchError,
  TimeoutError,
  UnauthorizedError,
  UnavailableError,
  UnexpectedResponseError,
  UnknownEncoderError,
  UrlExpiredError,
  type ServiceError,
} from '../../lambdas/service-client/index.js';
import { answerError, makeRedactor, toServiceError } from '../../lambdas/service-client/http.js';

const SECRET = 'sk-unit-secret-0123';
const transport = { redact: makeRedactor(SECRET), timeoutMs: 1000 };
const endpoint = 'POST /v1/datasets/{dataset}/models';
const target = 'POST http://127.0.0.1:1/v1/datasets/d1/models';

function answer(status: number, body: unknown, headers: Record<string, string> = {}): ServiceError {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return answerError(transport, endpoint, target, status, headers, text);
}

// docs/service-contract.md, B9: the codes and their statuses.
describe('error answers map to one class per code (B9)', () => {
  const cases: [number, string, new (...args: never[]) => ServiceError][] = [
    [400, 'invalid_request', InvalidRequestError],
    [400, 'invalid_label', InvalidLabelError],
    [400, 'unknown_encoder', UnknownEncoderError],
    [400, 'size_mismatch', SizeMismatchError],
    [401, 'unauthorized', UnauthorizedError],
    [402, 'no_credits', NoCreditsError],
    [403, 'url_expired', UrlExpiredError],
    [404, 'not_found', NotFoundError],
    [409, 'conflict', ConflictError],
    [409, 'not_ready', NotReadyError],
    [409, 'not_uploaded', NotUploadedError],
    [410, 'files_expired', FilesExpiredError],
    [429, 'rate_limited', RateLimitedError],
    [500, 'server_error', ServerError],
    [503, 'unavailable', UnavailableError],
  ];

  it.each(cases)('%i %s', (status, code, errorClass) => {
    const error = answer(status, { error: code, message: 'human text' });
    expect(error).toBeInstanceOf(errorClass);
    expect(error).toMatchObject({ status, code, serviceCode: code, endpoint });
    expect(error.retryable).toBe([429, 500, 503].includes(status));
    expect(error.message).toBe(`${target}: ${status} ${code}: human text`);
  });

  it('maps an unknown code to the class of its status', () => {
    expect(answer(409, { error: 'locked' })).toBeInstanceOf(ConflictError);
    expect(answer(409, { error: 'locked' })).toMatchObject({ code: 'conflict', serviceCode: 'locked' });
    expect(answer(400, { error: 'too_long' })).toBeInstanceOf(InvalidRequestError);
    expect(answer(422, { error: 'unprocessable' })).toBeInstanceOf(InvalidRequestError);
    expect(answer(403, { error: 'forbidden' })).toBeInstanceOf(UnauthorizedError);
    expect(answer(410, {})).toBeInstanceOf(FilesExpiredError);
    expect(answer(501, { error: 'nope' })).toMatchObject({ code: 'server_error', retryable: false });
  });

  it('classes 502 and 504 as unavailable and transient, whatever the body', () => {
    for (const status of [502, 504]) {
      const error = answer(status, '<html>Bad Gateway</html>');
      expect(error).toBeInstanceOf(UnavailableError);
      expect(error).toMatchObject({ retryable: true, serviceCode: undefined });
    }
  });

  it('keeps the code when the status is odd, but takes retryable from the status', () => {
    expect(answer(400, { error: 'rate_limited' })).toMatchObject({ code: 'rate_limited', retryable: false });
  });

  it('gives an UnexpectedResponseError for a status with no class', () => {
    expect(answer(302, 'moved')).toBeInstanceOf(UnexpectedResponseError);
  });

  it('reads Retry-After on 429 (seconds)', () => {
    const error = answer(429, { error: 'rate_limited' }, { 'retry-after': '2' });
    expect(error).toBeInstanceOf(RateLimitedError);
    expect(error.retryAfterMs).toBe(2000);
  });

  it('redacts the API key from a message the service echoes', () => {
    const error = answer(401, { error: 'unauthorized', message: `bad key ${SECRET}` });
    expect(error.message).not.toContain(SECRET);
    expect(error.message).toContain('[redacted]');
  });
});

describe('transport failures', () => {
  const sysError = (code: string) => Object.assign(new Error(`connect ${code} 127.0.0.1:1`), { code });

  it('a refused connection proves nothing was sent', () => {
    const error = toServiceError(sysError('ECONNREFUSED'), endpoint, target, false, transport);
    expect(error).toBeInstanceOf(ConnectionError);
    expect(error).toMatchObject({ requestSent: false, retryable: true, code: 'connection_error' });
    const aggregate = new AggregateError([sysError('ECONNREFUSED'), sysError('ENETUNREACH')], 'all failed');
    expect(toServiceError(aggregate, endpoint, target, false, transport)).toMatchObject({
      requestSent: false,
    });
  });

  it('a reset or closed socket is ambiguous', () => {
    for (const code of ['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'HPE_INVALID_CONSTANT']) {
      const error = toServiceError(sysError(code), endpoint, target, false, transport);
      expect(error).toBeInstanceOf(ConnectionError);
      expect(error).toMatchObject({ requestSent: true, retryable: true });
    }
  });

  it('an expired deadline or undici timeout is a TimeoutError', () => {
    expect(toServiceError(sysError('UND_ERR_ABORTED'), endpoint, target, true, transport)).toBeInstanceOf(
      TimeoutError,
    );
    expect(
      toServiceError(sysError('UND_ERR_HEADERS_TIMEOUT'), endpoint, target, false, transport),
    ).toMatchObject({
      code: 'timeout',
      retryable: true,
    });
  });

  it('a body shorter or longer than Content-Length on upload is a final SizeMismatchError', () => {
    const error = toServiceError(
      sysError('UND_ERR_REQ_CONTENT_LENGTH_MISMATCH'),
      endpoint,
      target,
      false,
      transport,
    );
    expect(error).toBeInstanceOf(SizeMismatchError);
    expect(error).toMatchObject({ retryable: false });
  });

  it('leaves other errors (bugs, a source stream failing) as they are', () => {
    const bug = new TypeError('bad argument');
    expect(toServiceError(bug, endpoint, target, false, transport)).toBe(bug);
    const invalid = sysError('UND_ERR_INVALID_ARG');
    expect(toServiceError(invalid, endpoint, target, false, transport)).toBe(invalid);
  });
});
