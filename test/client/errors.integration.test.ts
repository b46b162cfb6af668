/**
 * Every error class, provoked for real against the simulated service (or, for answers the
 * service never gives, a stub server) over HTTP on loopback; final errors are never retried.
 */
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import {
  ConflictError,
  ConnectionError,
  FilesExpiredError,
  GarbledAnswerError,
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
  UnsupportedNextActionError,
  UrlExpiredError,
} from '../../lambdas/service-client/index.js';
import {
  HOUR,
  refusingUrl,
  rejectionOf,
  streamError,
  trainableDataset,
  uploadedDataset,
  useFixtures,
} from './helpers.js';
import { csv, SAMPLE_TEXTS } from '../helpers/fixtures.js';

const fixtures = useFixtures();
const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';

describe('answers of the service', () => {
  it('UnauthorizedError for a wrong key, not retried', async () => {
    const service = await fixtures.service();
    const client = fixtures.client(service, { apiKey: 'not-the-key' });
    const error = await rejectionOf(client.listEncoders());
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect(error).toMatchObject({ status: 401, code: 'unauthorized', retryable: false });
    expect(service.requestCount('listEncoders')).toBe(1);
    expect(client.slept).toEqual([]);
  });

  it('NotFoundError for unknown datasets, models, files and tasks', async () => {
    const service = await fixtures.service();
    const client = fixtures.client(service);
    const dataset = await client.createDataset({ name: 'd', files: [{ name: 'a.csv', bytes: 3 }] });
    const errors = [
      await rejectionOf(client.getDataset(UNKNOWN_ID)),
      await rejectionOf(client.getModel(UNKNOWN_ID)),
      await rejectionOf(client.getDownloadLink(UNKNOWN_ID)),
      await rejectionOf(client.completeFile(dataset.id, UNKNOWN_ID)),
      await rejectionOf(client.startTraining(UNKNOWN_ID, 'enc-small')),
    ];
    for (const error of errors) {
      expect(error).toBeInstanceOf(NotFoundError);
      expect(error).toMatchObject({ status: 404, code: 'not_found', retryable: false });
    }
    expect((errors[0] as Error).message).toContain(
      `GET ${service.apiUrl}/v1/datasets/${UNKNOWN_ID}: 404 not_found`,
    );
    expect(errors[0]).toMatchObject({ endpoint: 'GET /v1/datasets/{dataset}' });
    expect(service.requestCount('getDataset')).toBe(1);
    expect(service.requestCount('startTraining')).toBe(1);
  });

  it('NotFoundError for an unknown label task', async () => {
    const service = await fixtures.service({ heldOutCount: 2 });
    const client = fixtures.client(service);
    const dataset = await uploadedDataset(client);
    await client.structure(dataset.id);
    expect(await rejectionOf(client.submitLabel(dataset.id, 'no-such-task', 'positive'))).toBeInstanceOf(
      NotFoundError,
    );
  });

  it('NoCreditsError with zero credits, tried once, no credit spent', async () => {
    const service = await fixtures.service({ credits: 0, heldOutCount: 0 });
    const client = fixtures.client(service);
    const dataset = await trainableDataset(client);
    const error = await rejectionOf(client.startTraining(dataset.id, 'enc-small'));
    expect(error).toBeInstanceOf(NoCreditsError);
    expect(error).toMatchObject({ status: 402, code: 'no_credits', retryable: false });
    expect(service.requestCount('startTraining')).toBe(1);
    expect(service.credits()).toBe(0);
  });

  it('ConflictError for actions in the wrong state and a changed label', async () => {
    const service = await fixtures.service({ heldOutCount: 2 });
    const client = fixtures.client(service);
    const uploading = await client.createDataset({ name: 'd', files: [{ name: 'a.csv', bytes: 3 }] });
    expect(await rejectionOf(client.suggest(uploading.id))).toBeInstanceOf(ConflictError);
    expect(await rejectionOf(client.structure(uploading.id))).toBeInstanceOf(ConflictError);
    expect(await rejectionOf(client.nextLabelTask(uploading.id))).toBeInstanceOf(ConflictError);

    const dataset = await uploadedDataset(client);
    await client.structure(dataset.id);
    // Structured already, and no ambiguous failure before: a plain conflict.
    const twice = await rejectionOf(client.structure(dataset.id));
    expect(twice).toBeInstanceOf(ConflictError);
    expect(twice).toMatchObject({ status: 409, code: 'conflict', retryable: false });
    expect(service.requestCount('structure')).toBe(3);

    const task = (await client.nextLabelTask(dataset.id))!;
    await client.submitLabel(dataset.id, task.task, 'positive');
    expect(await rejectionOf(client.submitLabel(dataset.id, task.task, 'negative'))).toBeInstanceOf(
      ConflictError,
    );
  });

  it('NotReadyError for training an unready dataset and downloading an unfinished model', async () => {
    const service = await fixtures.service({ heldOutCount: 0, queuedMs: 1000 });
    const client = fixtures.client(service);
    const uploading = await client.createDataset({ name: 'd', files: [{ name: 'a.csv', bytes: 3 }] });
    const error = await rejectionOf(client.startTraining(uploading.id, 'enc-small'));
    expect(error).toBeInstanceOf(NotReadyError);
    expect(error).toMatchObject({ status: 409, code: 'not_ready' });

    const dataset = await trainableDataset(client);
    const model = await client.startTraining(dataset.id, 'enc-small');
    expect(await rejectionOf(client.getDownloadLink(model.id))).toBeInstanceOf(NotReadyError);
  });

  it('NotUploadedError for completing a file whose bytes have not arrived', async () => {
    const service = await fixtures.service();
    const client = fixtures.client(service);
    const dataset = await client.createDataset({ name: 'd', files: [{ name: 'a.csv', bytes: 3 }] });
    const error = await rejectionOf(client.completeFile(dataset.id, dataset.files[0]!.id));
    expect(error).toBeInstanceOf(NotUploadedError);
    expect(error).toMatchObject({ status: 409, code: 'not_uploaded', retryable: false });
  });

  it('InvalidRequestError for a bad dataset, bad answers, and a bad limit refused before sending', async () => {
    const service = await fixtures.service();
    const client = fixtures.client(service);
    const badName = await rejectionOf(
      client.createDataset({ name: 'd', files: [{ name: '../a.csv', bytes: 3 }] }),
    );
    expect(badName).toBeInstanceOf(InvalidRequestError);
    expect(badName).toMatchObject({ status: 400, code: 'invalid_request', retryable: false });
    expect(
      await rejectionOf(client.createDataset({ name: '', files: [{ name: 'a.csv', bytes: 3 }] })),
    ).toBeInstanceOf(InvalidRequestError);

    const dataset = await uploadedDataset(client);
    const badAnswer = await rejectionOf(
      client.structure(dataset.id, [{ id: 'no-such-question', answer: 'yes' }]),
    );
    expect(badAnswer).toBeInstanceOf(InvalidRequestError);
    expect(() => client.listDatasets({ limit: 101 })).toThrow(RangeError);
    expect(service.requestCount('createDataset')).toBe(3);
  });

  it('InvalidLabelError for a label outside the choices', async () => {
    const service = await fixtures.service({ heldOutCount: 1 });
    const client = fixtures.client(service);
    const dataset = await uploadedDataset(client);
    await client.structure(dataset.id);
    const task = (await client.nextLabelTask(dataset.id))!;
    const error = await rejectionOf(client.submitLabel(dataset.id, task.task, 'maybe'));
    expect(error).toBeInstanceOf(InvalidLabelError);
    expect(error).toMatchObject({ status: 400, code: 'invalid_label', retryable: false });
  });

  it('UnknownEncoderError for an encoder the service does not offer, no credit spent', async () => {
    const service = await fixtures.service({ heldOutCount: 0 });
    const client = fixtures.client(service);
    const dataset = await trainableDataset(client);
    const credits = service.credits();
    const error = await rejectionOf(client.startTraining(dataset.id, 'enc-huge'));
    expect(error).toBeInstanceOf(UnknownEncoderError);
    expect(error).toMatchObject({ status: 400, code: 'unknown_encoder' });
    expect(service.credits()).toBe(credits);
  });

  it('SizeMismatchError from the file host, and from the client when the source is short', async () => {
    const service = await fixtures.service();
    const client = fixtures.client(service);
    const content = csv(SAMPLE_TEXTS);
    const dataset = await client.createDataset({
      name: 'd',
      files: [{ name: 'a.csv', bytes: Buffer.byteLength(content) }],
    });
    const file = dataset.files[0]!;
    const longer = content + 'r99,extra\n';
    // The record claims the longer size: the client sends that Content-Length, the host refuses it.
    const fromHost = await rejectionOf(
      client.uploadFile(dataset.id, { ...file, bytes: Buffer.byteLength(longer) }, () =>
        Readable.from([Buffer.from(longer)]),
      ),
    );
    expect(fromHost).toBeInstanceOf(SizeMismatchError);
    expect(fromHost).toMatchObject({ status: 400, code: 'size_mismatch', retryable: false });
    expect(service.requestCount('fileUpload')).toBe(1);

    const short = await rejectionOf(
      client.uploadFile(dataset.id, file, () => Readable.from([Buffer.from(content.slice(0, 10))])),
    );
    expect(short).toBeInstanceOf(SizeMismatchError);
    expect(short).toMatchObject({ status: undefined, retryable: false });
  });

  it('UrlExpiredError once the dataset has expired and fresh URLs do not help (bounded)', async () => {
    const service = await fixtures.service({ datasetTtlMs: HOUR });
    const client = fixtures.client(service, { maxTransferAttempts: 3 });
    const dataset = await client.createDataset({ name: 'd', files: [{ name: 'a.csv', bytes: 3 }] });
    service.clock.advance(HOUR);
    let opened = 0;
    const error = await rejectionOf(
      client.uploadFile(dataset.id, dataset.files[0]!, () => {
        opened++;
        return Readable.from([Buffer.from('abc')]);
      }),
    );
    expect(error).toBeInstanceOf(UrlExpiredError);
    expect(error).toMatchObject({ status: 403, code: 'url_expired', retryable: false });
    expect(service.requestCount('fileUpload')).toBe(3);
    expect(opened).toBe(3);
    expect(await client.getDataset(dataset.id)).toMatchObject({ status: 'expired', next_action: 'expired' });
  });

  it('FilesExpiredError from the link endpoint and from the download stream', async () => {
    const service = await fixtures.service({ heldOutCount: 0 });
    const client = fixtures.client(service);
    const dataset = await trainableDataset(client);
    const model = await client.startTraining(dataset.id, 'enc-small');
    service.clock.advance(25 * HOUR);
    const error = await rejectionOf(client.getDownloadLink(model.id));
    expect(error).toBeInstanceOf(FilesExpiredError);
    expect(error).toMatchObject({ status: 410, code: 'files_expired', retryable: false });
    expect(await streamError(client.downloadModel(model.id))).toBeInstanceOf(FilesExpiredError);
    expect(await client.getModel(model.id)).toMatchObject({ next_action: 'none' });
  });

  it('RateLimitedError, ServerError and UnavailableError once retries are used up', async () => {
    const service = await fixtures.service();
    const client = fixtures.client(service, { maxRetries: 2 });
    service.configure({ faults: [{ endpoint: 'listEncoders', kind: '429', retryAfterSeconds: 3 }] });
    const limited = await rejectionOf(client.listEncoders());
    expect(limited).toBeInstanceOf(RateLimitedError);
    expect(limited).toMatchObject({ status: 429, code: 'rate_limited', retryable: true, retryAfterMs: 3000 });

    service.configure({ faults: [{ endpoint: 'listEncoders', kind: '500' }] });
    const server = await rejectionOf(client.listEncoders());
    expect(server).toBeInstanceOf(ServerError);
    expect(server).toMatchObject({ status: 500, code: 'server_error', retryable: true });

    service.configure({ faults: [{ endpoint: 'listEncoders', kind: '503' }] });
    const unavailable = await rejectionOf(client.listEncoders());
    expect(unavailable).toBeInstanceOf(UnavailableError);
    expect(unavailable).toMatchObject({ status: 503, code: 'unavailable', retryable: true });
    expect(service.requestCount('listEncoders')).toBe(9);
  });
});

describe('transport failures', () => {
  it('ConnectionError when the connection drops, after retries', async () => {
    const service = await fixtures.service();
    const client = fixtures.client(service, { maxRetries: 1 });
    service.configure({ faults: [{ endpoint: 'getDataset', kind: 'drop' }] });
    const error = await rejectionOf(client.getDataset(UNKNOWN_ID));
    expect(error).toBeInstanceOf(ConnectionError);
    expect(error).toMatchObject({
      status: undefined,
      code: 'connection_error',
      retryable: true,
      requestSent: true,
    });
    expect(service.requestCount('getDataset')).toBe(2);
  });

  it('ConnectionError that proves nothing was sent when the connection is refused', async () => {
    const client = fixtures.client(await fixtures.service(), { baseUrl: await refusingUrl(), maxRetries: 2 });
    const error = await rejectionOf(client.listEncoders());
    expect(error).toBeInstanceOf(ConnectionError);
    expect(error).toMatchObject({ requestSent: false, retryable: true });
    expect(client.slept).toHaveLength(2);
  });

  it('TimeoutError when the answer does not come within timeoutMs', async () => {
    const service = await fixtures.service();
    const client = fixtures.client(service, { timeoutMs: 100, maxRetries: 1 });
    service.configure({ faults: [{ endpoint: 'getDataset', kind: 'stall', stallMs: 2000 }] });
    const started = Date.now();
    const error = await rejectionOf(client.getDataset(UNKNOWN_ID));
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error).toMatchObject({ code: 'timeout', retryable: true, status: undefined });
    expect((error as Error).message).toContain('no answer within 100 ms');
    expect(Date.now() - started).toBeLessThan(1500);
    expect(service.requestCount('getDataset')).toBe(2);
  });
});

describe('answers the client cannot use (stub server)', () => {
  const record = {
    kind: 'dataset',
    id: 'd1',
    name: 'd',
    status: 'read',
    step: 2,
    next_action: 'structure',
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: '2026-01-01T00:00:00.000Z',
    expires_at: '2026-01-08T00:00:00.000Z',
    files: [{ id: 'f1', name: 'a.csv', bytes: 3, status: 'uploaded' }],
  };

  async function stubClient(body: string, status = 200) {
    const url = await fixtures.stub((_req, res) => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(body);
    });
    return fixtures.client(await fixtures.service(), { baseUrl: url });
  }

  it('UnexpectedResponseError naming the endpoint and field path of an ill-typed field', async () => {
    const client = await stubClient(
      JSON.stringify({ ...record, files: [{ ...record.files[0], bytes: '3' }] }),
    );
    const error = await rejectionOf(client.getDataset('d1'));
    expect(error).toBeInstanceOf(UnexpectedResponseError);
    expect(error).toMatchObject({
      endpoint: 'GET /v1/datasets/{dataset}',
      fieldPath: 'files[0].bytes',
      retryable: false,
      status: 200,
    });
    expect((error as Error).message).toMatch(
      /^GET \/v1\/datasets\/\{dataset\}: unexpected answer: files\[0\]\.bytes: /,
    );
  });

  it('UnexpectedResponseError for a missing required field; GarbledAnswerError, retried, for a body that is not JSON', async () => {
    const { expires_at: _dropped, ...withoutExpiry } = record;
    const missing = await rejectionOf((await stubClient(JSON.stringify(withoutExpiry))).getDataset('d1'));
    expect(missing).toMatchObject({ code: 'unexpected_response', fieldPath: 'expires_at' });
    const garbledClient = await stubClient('<html>hello</html>');
    const notJson = await rejectionOf(garbledClient.getDataset('d1'));
    expect(notJson).toBeInstanceOf(GarbledAnswerError);
    expect(notJson).toMatchObject({
      code: 'garbled_answer',
      retryable: true,
      requestSent: true,
      status: 200,
    });
    expect((notJson as Error).message).toMatch(
      /^GET http:\/\/127\.0\.0\.1:\d+\/v1\/datasets\/d1: answer 200 is not JSON/,
    );
    // Sent again as often as a lost connection is (5 retries by default).
    expect(garbledClient.slept).toHaveLength(5);
  });

  it('accepts a record with unknown extra fields', async () => {
    const client = await stubClient(JSON.stringify({ ...record, shiny_new_field: { a: 1 } }));
    const dataset = await client.getDataset('d1');
    expect(dataset.next_action).toBe('structure');
    expect(dataset).not.toHaveProperty('shiny_new_field');
  });

  it('UnsupportedNextActionError for a next_action Hopper does not know', async () => {
    const client = await stubClient(JSON.stringify({ ...record, next_action: 'review_terms' }));
    const error = await rejectionOf(client.getDataset('d1'));
    expect(error).toBeInstanceOf(UnsupportedNextActionError);
    expect(error).toMatchObject({
      code: 'unsupported_next_action',
      nextAction: 'review_terms',
      retryable: false,
    });
    expect((error as Error).message).toBe('unsupported next_action: review_terms');
  });

  it('maps an unknown error code to the class of its status', async () => {
    const client = await stubClient(JSON.stringify({ error: 'dataset_locked', message: 'try later' }), 409);
    const error = await rejectionOf(client.getDataset('d1'));
    expect(error).toBeInstanceOf(ConflictError);
    expect(error).toMatchObject({ code: 'conflict', serviceCode: 'dataset_locked', status: 409 });
  });
});
