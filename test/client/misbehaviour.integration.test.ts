/**
 * A misbehaving service, where retrying cannot help: the real client against the simulated
 * service over loopback, one case per misbehaviour knob (local/service/faults/misbehaviour.ts), plus a
 * Retry-After far in the future and an API key rotated mid-run. Each case checks the error class,
 * its stable code, that the message names the endpoint and what was wrong, and that the call ends
 * within a bounded time.
 */
import { createConnection, createServer, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  RetryLaterError,
  ServiceError,
  SizeMismatchError,
  TimeoutError,
  UnauthorizedError,
  UnexpectedResponseError,
  type TrainingServiceClient,
} from '../../lambdas/service-client/index.js';
import { MAX_ANSWER_BYTES } from '../../lambdas/service-client/contract.js';
import type { SimulatedService } from '../../local/service/index.js';
import {
  allOf,
  rejectionOf,
  streamError,
  trainableDataset,
  uploadedDataset,
  useFixtures,
} from './helpers.js';

const fixtures = useFixtures();

/** Every case ends well within this (the slowest, trickle, is cut after TRICKLE_TIMEOUT_MS per attempt). */
const BOUND_MS = 5_000;
const HUGE_BODY_BYTES = 10 * 1024 * 1024;

/** The error `call` fails with, and how long it took; fails the test past BOUND_MS. */
async function failure(call: () => Promise<unknown>): Promise<{ error: ServiceError; ms: number }> {
  const started = performance.now();
  const error = await rejectionOf(call());
  const ms = performance.now() - started;
  expect(error).toBeInstanceOf(ServiceError);
  expect(ms).toBeLessThan(BOUND_MS);
  return { error: error as ServiceError, ms };
}

/** A model of `client` at the service, done: its id and onnx_bytes. */
async function doneModel(service: SimulatedService, client: TrainingServiceClient) {
  const dataset = await trainableDataset(client);
  const started = await client.startTraining(dataset.id, 'enc-small');
  service.clock.advance(1);
  const model = await client.getModel(started.id);
  expect(model.next_action).toBe('download');
  return { id: model.id, bytes: model.onnx_bytes ?? 0 };
}

/**
 * A TCP relay on loopback in front of `target`, counting the bytes it passed from the server to
 * the client: what the client was actually sent, whatever the server meant to send.
 */
async function countingRelay(target: string): Promise<{ url: string; bytesToClient: () => number }> {
  const { hostname, port } = new URL(target);
  let bytes = 0;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = createConnection({ host: hostname, port: Number(port) });
    sockets.add(client).add(upstream);
    upstream.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
    });
    client.pipe(upstream).pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  relays.push(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => {
      server.close(() => {
        resolve();
      });
    });
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bytesToClient: () => bytes,
  };
}
const relays: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(relays.splice(0).map((close) => close()));
});

describe('a service that misbehaves: one clear, final error per knob, within a bounded time', () => {
  it('missing_field: a record without next_action is UnexpectedResponseError naming the field, not retried', async () => {
    const service = await fixtures.service();
    const client = fixtures.client(service);
    const dataset = await uploadedDataset(client);
    const before = service.requestCount('getDataset');
    service.configure({ faults: [{ endpoint: 'getDataset', kind: 'missing_field', field: 'next_action' }] });
    const { error } = await failure(() => client.getDataset(dataset.id));
    expect(error).toBeInstanceOf(UnexpectedResponseError);
    expect(error).toMatchObject({
      code: 'unexpected_response',
      status: 200,
      retryable: false,
      endpoint: 'GET /v1/datasets/{dataset}',
      fieldPath: 'next_action',
    });
    expect(error.message).toMatch(/^GET \/v1\/datasets\/\{dataset\}: unexpected answer: next_action: /);
    expect(service.requestCount('getDataset') - before).toBe(1);
    expect(client.slept).toEqual([]);
  });

  it('missing_field on a list: every item lacks the field; the page is refused naming the item', async () => {
    const service = await fixtures.service();
    const client = fixtures.client(service);
    await uploadedDataset(client);
    service.configure({ faults: [{ endpoint: 'listDatasets', kind: 'missing_field', field: 'id' }] });
    const { error } = await failure(() => allOf(client.listDatasets()));
    expect(error).toMatchObject({
      code: 'unexpected_response',
      endpoint: 'GET /v1/datasets',
      fieldPath: 'data[0].id',
    });
    expect(error.message).toContain('GET /v1/datasets: unexpected answer: data[0].id: ');
  });

  it('wrong_type: step given as a string is UnexpectedResponseError naming the field and the type', async () => {
    const service = await fixtures.service();
    const client = fixtures.client(service);
    const dataset = await uploadedDataset(client);
    service.configure({ faults: [{ endpoint: 'getDataset', kind: 'wrong_type', field: 'step' }] });
    const { error } = await failure(() => client.getDataset(dataset.id));
    expect(error).toBeInstanceOf(UnexpectedResponseError);
    expect(error).toMatchObject({ code: 'unexpected_response', retryable: false, fieldPath: 'step' });
    expect(error.message).toMatch(
      /^GET \/v1\/datasets\/\{dataset\}: unexpected answer: step: .*number.*string/i,
    );
    expect(client.slept).toEqual([]);
  });

  it('huge_body: a 10 MiB answer is refused from its Content-Length, without reading it', async () => {
    const service = await fixtures.service();
    const relay = await countingRelay(service.apiUrl);
    const client = fixtures.client(service, { baseUrl: relay.url });
    service.configure({
      faults: [{ endpoint: 'listEncoders', kind: 'huge_body', bodyBytes: HUGE_BODY_BYTES }],
    });
    const { error } = await failure(() => client.listEncoders());
    expect(error).toBeInstanceOf(UnexpectedResponseError);
    expect(error).toMatchObject({
      code: 'unexpected_response',
      status: 200,
      retryable: false,
      endpoint: 'GET /v1/encoders',
    });
    expect(error.message).toBe(
      `GET ${relay.url}/v1/encoders: answer 200 is larger than ${MAX_ANSWER_BYTES} bytes, the most an answer of the service can hold`,
    );
    expect(service.requestCount('listEncoders')).toBe(1);
    // What was sent toward the client before it gave up: what socket buffers hold (about 2 MiB
    // here), not the body.
    expect(relay.bytesToClient()).toBeLessThan(HUGE_BODY_BYTES / 2);
  });

  it('trickle: an API answer sent a byte at a time is cut by the per-attempt read timeout, and each retry too', async () => {
    const service = await fixtures.service();
    const client = fixtures.client(service, { timeoutMs: 300, maxRetries: 1 });
    service.configure({ faults: [{ endpoint: 'listEncoders', kind: 'trickle', byteIntervalMs: 50 }] });
    const { error, ms } = await failure(() => client.listEncoders());
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error).toMatchObject({
      code: 'timeout',
      status: 200,
      retryable: true,
      endpoint: 'GET /v1/encoders',
    });
    expect(error.message).toMatch(
      /^GET http:\/\/127\.0\.0\.1:\d+\/v1\/encoders: answer 200 too slow: \d+ bytes of its body arrived within 300 ms$/,
    );
    // Two attempts of 300 ms each (the first retried once), not the seconds the body would take.
    expect(service.requestCount('listEncoders')).toBe(2);
    expect(ms).toBeGreaterThanOrEqual(600);
    expect(ms).toBeLessThan(2_000);
  });

  it('trickle on a download: an attempt slower than the floor is cut per timeoutMs window, and the download gives up after maxTransferAttempts', async () => {
    const service = await fixtures.service();
    const client = fixtures.client(service, { timeoutMs: 300, maxTransferAttempts: 2 });
    const model = await doneModel(service, client);
    service.configure({ faults: [{ endpoint: 'fileDownload', kind: 'trickle', byteIntervalMs: 20 }] });
    const { error, ms } = await failure(() =>
      streamError(client.downloadModel(model.id, { expectedBytes: model.bytes })).then((caught) => {
        throw caught;
      }),
    );
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error).toMatchObject({ code: 'timeout', retryable: true, endpoint: 'GET download url' });
    expect(error.message).toMatch(
      /^GET http:\/\/127\.0\.0\.1:\d+\/\S+: \d+ bytes arrived in 300 ms, slower than 8192 bytes\/s: the download trickles$/,
    );
    // Two attempts (the second resumed by Range), each cut after one window: not the 14 hours the
    // file would take, nor only the call's deadline.
    expect(service.requestCount('fileDownload')).toBe(2);
    expect(ms).toBeGreaterThanOrEqual(600);
    expect(ms).toBeLessThan(2_000);
    // Closing the service ends a trickle still under way at once: it stops at the dropped
    // socket, rather than writing the rest of the file byte by byte with the sleeps cut short.
    const closing = Date.now();
    await service.close();
    expect(Date.now() - closing).toBeLessThan(1_000);
  });

  it('redirect: a 302 is not followed; UnexpectedResponseError says where it pointed and to check the URL', async () => {
    const service = await fixtures.service();
    const client = fixtures.client(service);
    service.configure({ faults: [{ endpoint: 'listEncoders', kind: 'redirect' }] });
    const { error } = await failure(() => client.listEncoders());
    expect(error).toBeInstanceOf(UnexpectedResponseError);
    expect(error).toMatchObject({
      code: 'unexpected_response',
      status: 302,
      retryable: false,
      endpoint: 'GET /v1/encoders',
    });
    expect(error.message).toBe(
      `GET ${service.apiUrl}/v1/encoders: unexpected status 302: redirected to ${service.apiUrl}/moved/v1/encoders, and Hopper follows no redirect; check the service URL`,
    );
    expect(service.requestCount('listEncoders')).toBe(1);
  });

  it('repeat_cursor: paging stops at the first cursor handed out twice, after two pages', async () => {
    const service = await fixtures.service();
    const client = fixtures.client(service);
    await uploadedDataset(client);
    service.configure({ faults: [{ endpoint: 'listDatasets', kind: 'repeat_cursor' }] });
    const { error } = await failure(() => allOf(client.listDatasets({ limit: 1 })));
    expect(error).toBeInstanceOf(UnexpectedResponseError);
    expect(error).toMatchObject({
      code: 'unexpected_response',
      fieldPath: 'next',
      endpoint: 'GET /v1/datasets',
    });
    expect(error.message).toBe('GET /v1/datasets: the service returned a cursor it had returned before');
    expect(service.requestCount('listDatasets')).toBe(2);
  });

  it('repeat_cursor on models: modelsOfDataset (the credit check) ends with the same error, bounded', async () => {
    const service = await fixtures.service();
    const client = fixtures.client(service);
    const dataset = await uploadedDataset(client);
    service.configure({ faults: [{ endpoint: 'listModels', kind: 'repeat_cursor' }] });
    const { error } = await failure(async () => {
      for await (const _model of client.modelsOfDataset(dataset.id)) {
        // Drain.
      }
    });
    expect(error).toMatchObject({
      code: 'unexpected_response',
      fieldPath: 'next',
      endpoint: 'GET /v1/models',
    });
    expect(error.message).toBe('GET /v1/models: the service returned a cursor it had returned before');
    expect(service.requestCount('listModels')).toBe(2);
  });

  it('wrong_bytes: a download longer than onnx_bytes is SizeMismatchError before a byte is passed on', async () => {
    const service = await fixtures.service();
    const client = fixtures.client(service);
    const model = await doneModel(service, client);
    service.configure({ faults: [{ endpoint: 'fileDownload', kind: 'wrong_bytes' }] });
    let passedOn = 0;
    const { error } = await failure(async () => {
      const stream = client.downloadModel(model.id, { expectedBytes: model.bytes });
      stream.on('data', (chunk: Buffer) => {
        passedOn += chunk.length;
      });
      throw await streamError(stream);
    });
    expect(error).toBeInstanceOf(SizeMismatchError);
    expect(error).toMatchObject({
      code: 'size_mismatch',
      status: 200,
      retryable: false,
      endpoint: 'GET download url',
    });
    expect(error.message).toMatch(
      new RegExp(
        `^GET ${service.fileUrl}/\\S+: the file has ${model.bytes + 1} bytes, ${model.bytes} were expected$`,
      ),
    );
    expect(passedOn).toBe(0);
    expect(service.requestCount('fileDownload')).toBe(1);
  });

  it('Retry-After a day away: RetryLaterError at once, no wait and no second request', async () => {
    const service = await fixtures.service();
    const client = fixtures.client(service);
    service.configure({
      faults: [{ endpoint: 'getModel', kind: '429', retryAfterSeconds: 86_400, count: 1 }],
    });
    const { error } = await failure(() => client.getModel('00000000-0000-4000-8000-000000000000'));
    expect(error).toBeInstanceOf(RetryLaterError);
    expect(error).toMatchObject({
      code: 'retry_later',
      status: 429,
      retryable: false,
      retryAfterMs: 86_400_000,
    });
    expect(error.message).toBe(
      'GET /v1/models/{model}: the service asked to be called again in 86400 s (Retry-After on a 429 answer), longer than a call waits (60 s)',
    );
    expect(client.slept).toEqual([]);
    expect(service.requestCount('getModel')).toBe(1);
  });

  it('a key rotated mid-run: UnauthorizedError on the next call, named, not retried', async () => {
    const service = await fixtures.service();
    const client = fixtures.client(service);
    const dataset = await uploadedDataset(client);
    service.configure({ apiKey: 'rotated-key' });
    const { error } = await failure(() => client.getDataset(dataset.id));
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect(error).toMatchObject({
      code: 'unauthorized',
      status: 401,
      retryable: false,
      endpoint: 'GET /v1/datasets/{dataset}',
    });
    expect(error.message).toBe(
      `GET ${service.apiUrl}/v1/datasets/${dataset.id}: 401 unauthorized: missing or wrong API key (Authorization: Bearer <key>)`,
    );
    expect(client.slept).toEqual([]);
  });
});
