/**
 * The cloud ExecutionStarter: StartExecution through the real SFN client. Step Functions has no
 * local server, so a loopback HTTP server answers the one call of its JSON protocol the way the
 * service does, including the ExecutionAlreadyExists error a duplicate name gets.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SFNClient } from '@aws-sdk/client-sfn';
import { afterEach, describe, expect, it } from 'vitest';
import { sfnExecutionStarter } from '../../lambdas/steps/trigger.js';

interface FakeStepFunctions {
  readonly client: SFNClient;
  readonly requests: { target: string; body: Record<string, unknown> }[];
  close(): Promise<void>;
}

async function stepFunctionsServer(): Promise<FakeStepFunctions> {
  const requests: FakeStepFunctions['requests'] = [];
  const names = new Set<string>();
  const server: Server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => {
      const body = JSON.parse(text) as Record<string, unknown>;
      requests.push({ target: String(req.headers['x-amz-target']), body });
      const name = String(body.name);
      res.setHeader('content-type', 'application/x-amz-json-1.0');
      if (name === 'boom') {
        res.writeHead(400);
        res.end(JSON.stringify({ __type: 'InvalidName', message: 'bad name' }));
        return;
      }
      if (names.has(name)) {
        res.writeHead(400);
        res.end(
          JSON.stringify({ __type: 'ExecutionAlreadyExists', message: `Execution Already Exists: ${name}` }),
        );
        return;
      }
      names.add(name);
      res.writeHead(200);
      res.end(
        JSON.stringify({ executionArn: `arn:aws:states:us-east-1:1:execution:sm:${name}`, startDate: 1 }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = new SFNClient({
    endpoint: `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`,
    region: 'us-east-1',
    credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
    maxAttempts: 1,
  });
  return {
    client,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        client.destroy();
        server.close(() => {
          resolve();
        });
      }),
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
      input: JSON.stringify(INPUT),
    });
  });

  it('lets any other refusal through, so the event is retried and then dead-lettered', async () => {
    sfn = await stepFunctionsServer();
    const starter = sfnExecutionStarter(ARN, sfn.client);
    await expect(starter.start('boom', INPUT)).rejects.toMatchObject({ name: 'InvalidName' });
  });
});
