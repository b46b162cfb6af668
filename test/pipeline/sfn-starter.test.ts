/**
 * The cloud ExecutionStarter: StartExecution through the real SFN client. Step Functions has no
 * local server, so a loopback HTTP server answers the one call of its JSON protocol the way the
 * service does, including the ExecutionAlreadyExists error a duplicate name gets.
 */
import { SFNClient } from '@aws-sdk/client-sfn';
import { afterEach, describe, expect, it } from 'vitest';
import { sfnExecutionStarter } from '../../lambdas/trigger/start-execution.js';
import { CLIENT_SETTINGS, startAwsJsonEndpoint, type AwsJsonRequest } from '../helpers/aws-json-endpoint.js';

interface FakeStepFunctions {
  readonly client: SFNClient;
  readonly requests: AwsJsonRequest[];
  close(): Promise<void>;
}

/** StartExecution: a name seen before is ExecutionAlreadyExists; the name "boom" is refused. */
async function stepFunctionsServer(): Promise<FakeStepFunctions> {
  const names = new Set<string>();
  const endpoint = await startAwsJsonEndpoint('application/x-amz-json-1.0', ({ body }) => {
    const name = String(body.name);
    if (name === 'boom') return { status: 400, body: { __type: 'InvalidName', message: 'bad name' } };
    if (names.has(name)) {
      return {
        status: 400,
        body: { __type: 'ExecutionAlreadyExists', message: `Execution Already Exists: ${name}` },
      };
    }
    names.add(name);
    return {
      status: 200,
      body: { executionArn: `arn:aws:states:us-east-1:1:execution:sm:${name}`, startDate: 1 },
    };
  });
  const client = new SFNClient({ ...CLIENT_SETTINGS, endpoint: endpoint.url, maxAttempts: 1 });
  return {
    client,
    requests: endpoint.requests,
    close: async () => {
      client.destroy();
      await endpoint.close();
    },
  };
}

let sfn: FakeStepFunctions | undefined;
afterEach(async () => {
  await sfn?.close();
  sfn = undefined;
});

const ARN = 'arn:aws:states:us-east-1:123456789012:stateMachine:hopper';
const INPUT = {
  run: {
    runId: 'reviews-abc',
    bucket: 'b',
    drop: 'reviews',
    key: 'inbox/reviews/train.json',
    etag: 'e',
    startedAt: '2026-01-01T00:00:00.000Z',
  },
};

describe('sfnExecutionStarter', () => {
  it('starts the execution with its name and JSON input, and calls a repeated name a duplicate', async () => {
    sfn = await stepFunctionsServer();
    const starter = sfnExecutionStarter(ARN, sfn.client);

    expect(await starter.start('reviews-abc', INPUT)).toBe('started');
    expect(await starter.start('reviews-abc', INPUT)).toBe('duplicate');

    expect(sfn.requests).toHaveLength(2);
    expect(sfn.requests[0]?.target).toBe('AWSStepFunctions.StartExecution');
    expect(sfn.requests[0]?.body).toEqual({
      stateMachineArn: ARN,
      name: 'reviews-abc',
      // The execution's ARN joins the run, for the run's events (the Lambdas cannot look it up).
      input: JSON.stringify({
        run: {
          ...INPUT.run,
          executionArn: 'arn:aws:states:us-east-1:123456789012:execution:hopper:reviews-abc',
        },
      }),
    });
  });

  it('lets any other refusal through, so the event is retried and then dead-lettered', async () => {
    sfn = await stepFunctionsServer();
    const starter = sfnExecutionStarter(ARN, sfn.client);
    await expect(starter.start('boom', INPUT)).rejects.toMatchObject({ name: 'InvalidName' });
  });
});
