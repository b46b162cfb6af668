/**
 * Streaming uploads to and downloads from presigned URLs of the simulated service: sizes,
 * digests, fresh sources and links, Range resumption, expiry, and the headers actually sent.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { Agent, type Dispatcher } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { modelBytesAt, type SimulatedService } from '../../local/service/index.js';
import {
  ConnectionError,
  FilesExpiredError,
  SizeMismatchError,
  UnavailableError,
  UnexpectedResponseError,
  type TrainingServiceClientOptions,
} from '../../lambdas/service-client/index.js';
import { HOUR, MINUTE, rejectionOf, streamError, trainableDataset, useFixtures } from './helpers.js';
import { csv } from '../helpers/fixtures.js';

const fixtures = useFixtures();

interface SentRequest {
  readonly origin: string;
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
}

const agents: Agent[] = [];
afterEach(async () => {
  await Promise.all(agents.splice(0).map((agent) => agent.close()));
});

/** An Agent that records the method, URL and headers of every request it sends. */
function recordingAgent(): { dispatcher: Dispatcher; sent: SentRequest[] } {
  const sent: SentRequest[] = [];
  const agent = new Agent();
  agents.push(agent);
  const dispatcher = agent.compose((dispatch) => (options, handler) => {
    const headers: Record<string, string> = {};
    const raw = options.headers ?? {};
    const pairs: [string, unknown][] = Array.isArray(raw)
      ? Array.from({ length: raw.length / 2 }, (_, i) => [String(raw[2 * i]), raw[2 * i + 1]])
      : Object.entries(raw as Record<string, unknown>);
    for (const [name, value] of pairs) headers[name.toLowerCase()] = String(value);
    sent.push({ origin: String(options.origin), method: options.method, path: options.path, headers });
    return dispatch(options, handler);
  });
  return { dispatcher, sent };
}

/**
 * A CSV of `rows` fixed-width rows, produced lazily in chunks of 1,000 rows: its bytes exist
 * only while they stream.
 */
function* generatedCsv(rows: number): Generator<Buffer> {
  yield Buffer.from('id,text\n');
  for (let start = 0; start < rows; start += 1000) {
    let chunk = '';
    for (let i = start; i < Math.min(rows, start + 1000); i++) {
      const n = String(i).padStart(9, '0');
      chunk += `${n},review ${n}: delivered on time and works as described\n`;
    }
    yield Buffer.from(chunk);
  }
}

function digestOf(chunks: Iterable<Buffer>): { bytes: number; sha256: string } {
  const hash = createHash('sha256');
  let bytes = 0;
  for (const chunk of chunks) {
    hash.update(chunk);
    bytes += chunk.length;
  }
  return { bytes, sha256: hash.digest('hex') };
}

async function newDataset(service: SimulatedService, content: string | { bytes: number }, options = {}) {
  const { dispatcher, sent } = recordingAgent();
  const client = fixtures.client(service, { dispatcher, ...options });
  const bytes = typeof content === 'string' ? Buffer.byteLength(content) : content.bytes;
  const dataset = await client.createDataset({ name: 'd', files: [{ name: 'data.csv', bytes }] });
  return { client, sent, dataset, file: dataset.files[0]! };
}

describe('upload', () => {
  it('streams a generated 40 MB file with Content-Length and no Authorization header', async () => {
    const service = await fixtures.service();
    const rows = 600_000;
    const expected = digestOf(generatedCsv(rows));
    expect(expected.bytes).toBeGreaterThan(40_000_000);
    const { client, sent, dataset, file } = await newDataset(service, { bytes: expected.bytes });

    const completed = await client.uploadFile(dataset.id, file, () =>
      Readable.from(generatedCsv(rows), { objectMode: false }),
    );
    expect(completed.files[0]!.status).toBe('uploaded');
    expect(service.fileDigest(dataset.id, 'data.csv')).toEqual(expected);

    const put = sent.find((request) => request.method === 'PUT')!;
    expect(put.origin).toBe(service.fileUrl);
    expect(put.headers['content-length']).toBe(String(expected.bytes));
    expect(put.headers).not.toHaveProperty('authorization');
    expect(put.headers).not.toHaveProperty('transfer-encoding');
    const complete = sent.find((request) => request.path.endsWith('/complete'))!;
    expect(complete.headers.authorization).toBe(`Bearer ${service.apiKey}`);
  });

  it('sends a failed transfer again whole, from a fresh source each time', async () => {
    const service = await fixtures.service();
    const content = csv(Array.from({ length: 20_000 }, (_, i) => `row ${i} of a two-megabyte file`));
    const { client, dataset, file } = await newDataset(service, content);
    service.configure({
      faults: [
        { endpoint: 'fileUpload', kind: '500', count: 1 },
        { endpoint: 'fileUpload', kind: 'drop', count: 1 },
      ],
    });
    let opened = 0;
    await client.uploadFile(dataset.id, file, () => {
      opened++;
      return Readable.from([Buffer.from(content)]);
    });
    expect(opened).toBe(3);
    expect(service.requestCount('fileUpload')).toBe(3);
    expect(service.fileDigest(dataset.id, 'data.csv')).toEqual(digestOf([Buffer.from(content)]));
  });

  it('opens the source again when it fails mid-stream', async () => {
    const service = await fixtures.service();
    const content = csv(['first', 'second', 'third']);
    const { client, dataset, file } = await newDataset(service, content);
    let opened = 0;
    await client.uploadFile(dataset.id, file, () => {
      opened++;
      if (opened > 1) return Readable.from([Buffer.from(content)]);
      return Readable.from(
        (async function* () {
          yield Buffer.from(content.slice(0, 5));
          await Promise.resolve();
          throw new Error('source read failed');
        })(),
        { objectMode: false },
      );
    });
    expect(opened).toBe(2);
    expect(service.fileDigest(dataset.id, 'data.csv')?.bytes).toBe(Buffer.byteLength(content));
  });

  it('replaces an expired upload URL with a fresh one from GET dataset', async () => {
    const service = await fixtures.service();
    const content = csv(['one', 'two']);
    const { client, dataset, file } = await newDataset(service, content);
    service.clock.advance(HOUR);
    const completed = await client.uploadFile(dataset.id, file, () => Readable.from([Buffer.from(content)]));
    expect(completed.files[0]!.status).toBe('uploaded');
    expect(service.requestCount('fileUpload')).toBe(2);
    expect(service.requestCount('getDataset')).toBe(1);
  });

  it('completes a file uploaded and completed before without sending it again', async () => {
    const service = await fixtures.service();
    const content = csv(['one', 'two']);
    const { client, dataset, file } = await newDataset(service, content);
    await client.uploadFile(dataset.id, file, () => Readable.from([Buffer.from(content)]));
    let opened = 0;
    const again = await client.uploadFile(dataset.id, file, () => {
      opened++;
      return Readable.from([Buffer.from(content)]);
    });
    expect(again.files[0]!.status).toBe('uploaded');
    expect(service.requestCount('completeFile')).toBe(2);
    expect(opened).toBeLessThanOrEqual(1);
  });

  it('uploads an empty file', async () => {
    const service = await fixtures.service();
    const { client, dataset, file } = await newDataset(service, '');
    const completed = await client.uploadFile(dataset.id, file, () => Readable.from([]));
    expect(completed.files[0]!.status).toBe('uploaded');
    expect(service.fileDigest(dataset.id, 'data.csv')).toEqual(digestOf([]));
  });

  it('gives up after maxTransferAttempts', async () => {
    const service = await fixtures.service();
    const content = csv(['one']);
    const { client, dataset, file } = await newDataset(service, content, { maxTransferAttempts: 3 });
    service.configure({ faults: [{ endpoint: 'fileUpload', kind: '503' }] });
    const error = await rejectionOf(
      client.uploadFile(dataset.id, file, () => Readable.from([Buffer.from(content)])),
    );
    expect(error).toBeInstanceOf(UnavailableError);
    expect(service.requestCount('fileUpload')).toBe(3);
    expect(service.requestCount('completeFile')).toBe(0);
  });
});

describe('download', () => {
  async function doneModel(modelBytes: number, options: Partial<TrainingServiceClientOptions> = {}) {
    const service = await fixtures.service({ heldOutCount: 0, modelBytes });
    const { dispatcher, sent } = recordingAgent();
    const client = fixtures.client(service, { dispatcher, ...options });
    const dataset = await trainableDataset(client);
    const model = await client.startTraining(dataset.id, 'enc-small');
    return { service, client, sent, model };
  }

  async function readAll(stream: Readable): Promise<Buffer> {
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }

  it('resumes with Range after cuts, byte for byte equal to the service generator', async () => {
    const size = 3_000_000;
    const { service, client, sent, model } = await doneModel(size);
    service.configure({
      faults: [{ endpoint: 'fileDownload', kind: 'cut', count: 3, cutAfterBytes: 300_000 }],
    });
    const bytes = await readAll(client.downloadModel(model.id, { expectedBytes: size }));
    expect(bytes.length).toBe(size);
    expect(bytes.equals(modelBytesAt(model.id, 0, size))).toBe(true);
    expect(service.requestCount('fileDownload')).toBe(4);
    expect(service.requestCount('getDownloadLink')).toBe(1);

    const gets = sent.filter((request) => request.origin === service.fileUrl && request.method === 'GET');
    expect(gets).toHaveLength(4);
    expect(gets[0]!.headers).not.toHaveProperty('range');
    const starts = gets.slice(1).map((request) => Number(/^bytes=(\d+)-$/.exec(request.headers.range!)![1]));
    expect(starts.every((start, i) => start > (starts[i - 1] ?? 0))).toBe(true);
    for (const request of gets) expect(request.headers).not.toHaveProperty('authorization');
  });

  it('asks for a fresh link when the link expires between attempts', async () => {
    const size = 500_000;
    const { service, model } = await doneModel(size);
    // The wait before resuming lasts past the link's 15 minutes.
    const client = fixtures.client(service, {
      sleep: () => {
        service.clock.advance(16 * MINUTE);
        return Promise.resolve();
      },
    });
    service.configure({
      faults: [{ endpoint: 'fileDownload', kind: 'cut', count: 1, cutAfterBytes: 100_000 }],
    });
    const bytes = await readAll(client.downloadModel(model.id));
    expect(bytes.equals(modelBytesAt(model.id, 0, size))).toBe(true);
    expect(service.requestCount('getDownloadLink')).toBe(2);
    expect(service.requestCount('fileDownload')).toBe(3);
  });

  it('throws FilesExpiredError when the files go while downloading', async () => {
    const { service, model } = await doneModel(500_000);
    // The files move to the hosting service while the client waits to resume.
    const client = fixtures.client(service, {
      sleep: () => {
        service.removeModelFiles(model.id, 'moved');
        return Promise.resolve();
      },
    });
    service.configure({
      faults: [{ endpoint: 'fileDownload', kind: 'cut', count: 1, cutAfterBytes: 100_000 }],
    });
    expect(await streamError(client.downloadModel(model.id))).toBeInstanceOf(FilesExpiredError);
    expect(service.requestCount('fileDownload')).toBe(2);
  });

  it('fails with SizeMismatchError when the file is not the expected size', async () => {
    const { service, client, model } = await doneModel(10_000);
    const error = await streamError(client.downloadModel(model.id, { expectedBytes: 10_001 }));
    expect(error).toBeInstanceOf(SizeMismatchError);
    expect(service.requestCount('fileDownload')).toBe(1);
  });

  it('gives up after maxTransferAttempts failures without progress', async () => {
    const { service, client, model } = await doneModel(10_000, { maxTransferAttempts: 3 });
    service.configure({ faults: [{ endpoint: 'fileDownload', kind: 'cut', cutAfterBytes: 0 }] });
    expect(await streamError(client.downloadModel(model.id))).toBeInstanceOf(ConnectionError);
    expect(service.requestCount('fileDownload')).toBe(3);
  });

  it('pulls only what is read (backpressure) and stops cleanly when the reader stops', async () => {
    const size = 64 * 1024 * 1024;
    const { service, client, model } = await doneModel(size);
    const stream = client.downloadModel(model.id);
    const first = await new Promise<Buffer>((resolve) => {
      stream.once('readable', () => {
        resolve(stream.read() as Buffer);
      });
    });
    expect(first.equals(modelBytesAt(model.id, 0, first.length))).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(stream.readableLength).toBeLessThan(1024 * 1024);
    const closed = new Promise((resolve) => stream.once('close', resolve));
    stream.destroy();
    await closed;
    expect(service.requestCount('fileDownload')).toBe(1);
  });

  it('skips what it already has when the host ignores Range and sends the whole file again', async () => {
    const body = Buffer.from('0123456789abcdefghij');
    let requests = 0;
    const url: string = await fixtures.stub((req, res) => {
      if (req.url === '/v1/models/m1/download') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ url: `${url}/file`, expires_at: '2026-01-01T00:15:00.000Z' }));
        return;
      }
      requests++;
      res.writeHead(200, { 'content-length': String(body.length) });
      if (requests === 1) {
        res.write(body.subarray(0, 7), () => res.destroy());
      } else {
        res.end(body);
      }
    });
    const client = fixtures.client(await fixtures.service(), { baseUrl: url });
    expect((await readAll(client.downloadModel('m1'))).equals(body)).toBe(true);
    expect(requests).toBe(2);
  });

  it('refuses a 206 that does not start where it asked', async () => {
    const url: string = await fixtures.stub((req, res) => {
      if (req.url === '/v1/models/m1/download') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ url: `${url}/file`, expires_at: '2026-01-01T00:15:00.000Z' }));
        return;
      }
      if (req.headers.range === undefined) {
        res.writeHead(200, { 'content-length': '20' });
        res.write(Buffer.alloc(7), () => res.destroy());
      } else {
        res.writeHead(206, { 'content-range': 'bytes 10-19/20', 'content-length': '10' });
        res.end(Buffer.alloc(10));
      }
    });
    const client = fixtures.client(await fixtures.service(), { baseUrl: url });
    const error = await streamError(client.downloadModel('m1'));
    expect(error).toBeInstanceOf(UnexpectedResponseError);
    expect(error).toMatchObject({ fieldPath: 'content-range' });
  });
});
