/**
 * A Lambda container's run event bus (runtimeFromEnvironment): PutEvents with the source from
 * HOPPER_EVENT_SOURCE (or `hopper`), through the real EventBridge client pointed at a loopback
 * stand-in by the SDK's own endpoint setting. Its own file: the runtime is cached per module.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { runStartedEvent } from '../../lambdas/records/events/index.js';
import { ENV, eventBridgeFromEnvironment, runtimeFromEnvironment } from '../../lambdas/runtime/index.js';
import { startAwsJsonEndpoint, type AwsJsonEndpoint } from '../helpers/aws-json-endpoint.js';

const SDK_SETTINGS = [
  'AWS_ENDPOINT_URL_EVENTBRIDGE',
  'AWS_REGION',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
];

let endpoint: AwsJsonEndpoint | undefined;
const saved = Object.fromEntries(SDK_SETTINGS.map((name) => [name, process.env[name]]));
afterEach(async () => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) Reflect.deleteProperty(process.env, name);
    else process.env[name] = value;
  }
  await endpoint?.close();
});

describe('runtimeFromEnvironment: run events', () => {
  it('puts them on the default bus with the source HOPPER_EVENT_SOURCE names', async () => {
    endpoint = await startAwsJsonEndpoint('application/x-amz-json-1.1', () => ({
      status: 200,
      body: { FailedEntryCount: 0, Entries: [{ EventId: 'e-1' }] },
    }));
    Object.assign(process.env, {
      AWS_ENDPOINT_URL_EVENTBRIDGE: endpoint.url,
      AWS_REGION: 'eu-west-1',
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
    });
    const runtime = await runtimeFromEnvironment(
      { [ENV.eventSource]: 'com.example.hopper' },
      { events: eventBridgeFromEnvironment },
    );
    const event = runStartedEvent({
      run: { runId: 'r-1', bucket: 'b', drop: 'd', key: 'inbox/d/train.json', etag: 'e', startedAt: 'x' },
    });
    await runtime.events.put(event);

    expect(endpoint.requests).toHaveLength(1);
    expect(endpoint.requests[0]?.target).toBe('AWSEvents.PutEvents');
    expect(endpoint.requests[0]?.body.Entries).toEqual([
      {
        Source: 'com.example.hopper',
        DetailType: 'Hopper Run Started',
        Detail: JSON.stringify(event.detail),
        Resources: [],
      },
    ]);
  });
});
