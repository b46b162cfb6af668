import { describe, expect, it } from 'vitest';
import {
  RunError,
  causeMessage,
  codedMessage,
  describeFailure,
  isTimeoutError,
  lambdaCause,
  parseCause,
  parseCodedMessage,
  TIMEOUT_ERRORS,
} from '../../lambdas/core/errors/index.js';
import { LambdaInvocationError } from '../../local/emulator/lambda-invoke.js';

const STACK = 'Error: boom\n    at step (/var/task/index.mjs:10:5)\n    at process (node:internal/x:1:1)';

/** A Cause as Lambda writes it, with the stack trace it adds. */
function lambdaCauseWithTrace(errorType: string, errorMessage: string): string {
  return JSON.stringify({
    errorType,
    errorMessage,
    trace: [`${errorType}: ${errorMessage}`, ...STACK.split('\n')],
  });
}

describe('a Lambda error Cause: one format, one parser', () => {
  it('reads back what it formats, and what local mode throws', () => {
    expect(parseCause(lambdaCause('Hopper.Failed', 'no_credits: none'))).toEqual({
      message: 'no_credits: none',
      fromLambda: true,
    });
    const local = new LambdaInvocationError('Hopper.Retryable', 'storage_error: slow');
    expect(local.message).toBe(lambdaCause('Hopper.Retryable', 'storage_error: slow'));
    expect(parseCause(local.message)).toEqual({ message: 'storage_error: slow', fromLambda: true });
  });

  it('takes anything else as the message itself, and nothing as undefined', () => {
    for (const cause of ['Task timed out', 'null', '"text"', '7', '{not json', '{"errorMessage": 42}']) {
      expect(parseCause(cause)).toEqual({ message: cause, fromLambda: false });
    }
    for (const cause of [undefined, '', '   ', 42, { Cause: 'an object' }])
      expect(parseCause(cause)).toBeUndefined();
  });
});

describe('causeMessage (the report: a message for the status file)', () => {
  it('reads Lambda JSON and plain strings, and cuts stack traces', () => {
    expect(causeMessage(lambdaCauseWithTrace('Hopper.Failed', 'no_credits: none'))).toBe('no_credits: none');
    expect(causeMessage('service_error: refused')).toBe('service_error: refused');
    expect(causeMessage(`internal_error: boom\n${STACK}`)).toBe('internal_error: boom Error: boom');
    expect(causeMessage(JSON.stringify({ errorMessage: `storage_error: slow\n${STACK}` }))).toBe(
      'storage_error: slow Error: boom',
    );
    expect(causeMessage(undefined)).toBeUndefined();
    expect(causeMessage('')).toBeUndefined();
    expect(causeMessage(JSON.stringify({ errorMessage: '' }))).toBeUndefined();
    expect(causeMessage('{not json')).toBe('{not json');
    expect(causeMessage(42)).toBeUndefined();
  });

  it('caps a huge Cause', () => {
    const text = causeMessage(`internal_error: ${'x'.repeat(5000)}`);
    expect(text?.length).toBeLessThanOrEqual(1003);
    expect(text?.endsWith('...')).toBe(true);
  });
});

describe('describeFailure (progress lines and the console)', () => {
  it("unwraps a Lambda error's JSON cause to Hopper's `<code>: <text>`", () => {
    const error = new RunError('invalid_train_json', 'train.json: "encoder" must be a string');
    const lambda = new LambdaInvocationError(error.name, error.message);
    expect(describeFailure(lambda.name, lambda.message)).toBe(
      'invalid_train_json: train.json: "encoder" must be a string',
    );
  });

  it('keeps the error name with a cause that is not a Lambda error', () => {
    expect(describeFailure('States.Timeout', 'Task timed out')).toBe('States.Timeout: Task timed out');
    expect(describeFailure('States.Runtime', '{"message":"not a lambda error"}')).toBe(
      'States.Runtime: {"message":"not a lambda error"}',
    );
    expect(describeFailure('X', '{"errorMessage": 42}')).toBe('X: {"errorMessage": 42}');
    for (const cause of ['null', '"text"', '7', '{not json']) {
      expect(describeFailure('X', cause)).toBe(`X: ${cause}`);
    }
  });

  it('is the error name alone without a readable cause', () => {
    expect(describeFailure('States.Runtime', '')).toBe('States.Runtime');
    expect(describeFailure('States.Runtime', undefined)).toBe('States.Runtime');
    expect(describeFailure('States.Runtime', { Cause: 'an object' })).toBe('States.Runtime');
    expect(describeFailure('Hopper.Failed', lambdaCause('Hopper.Failed', ''))).toBe('Hopper.Failed');
  });
});

describe('`<code>: <text>` messages', () => {
  it('parses what RunError writes, and nothing else', () => {
    const error = new RunError('label_missing', 'no row matches\nexample 3');
    expect(error.message).toBe(codedMessage('label_missing', 'no row matches\nexample 3'));
    expect(parseCodedMessage(error.message)).toEqual({
      code: 'label_missing',
      text: 'no row matches\nexample 3',
    });
    for (const text of [
      'no code here',
      'Label_missing: capital',
      'label_missing:no space',
      'label_missing: ',
    ]) {
      expect(parseCodedMessage(text)).toBeNull();
    }
  });
});

describe('timeout error names', () => {
  it("are Step Functions' and Lambda's", () => {
    expect([...TIMEOUT_ERRORS].sort()).toEqual(['Sandbox.Timedout', 'States.Timeout']);
    expect(isTimeoutError('Sandbox.Timedout')).toBe(true);
    expect(isTimeoutError('States.TaskFailed')).toBe(false);
  });
});
