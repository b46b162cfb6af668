/** The presigned model download (file port): bytes, Range, expiry, streaming memory and cut faults. */
import { describe, expect, it } from 'vitest';
import { modelBytesAt } from '../../local/service/index.js';
import {
  MINUTE,
  api,
  doneModel,
  expectError,
  expectStatus,
  readResponse,
  tamperUrl,
  useHarnesses,
} from '../helpers/service-http.js';
import type { Harness, ModelRecord } from '../helpers/service-http.js';

const start = useHarnesses();

async function linkFor(h: Harness, model: ModelRecord): Promise<string> {
  const res = await api<{ url: string }>(h, 'GET', `/v1/models/${model.id}/download`);
  return expectStatus(res, 200).url;
}

async function readAll(res: Response): Promise<Buffer> {
  return Buffer.from(await res.arrayBuffer());
}

describe('GET download url', () => {
  it('serves onnx_bytes bytes of the deterministic model file without auth', async () => {
    const h = await start({ modelBytes: 100_003 });
    const model = await doneModel(h);
    expect(model.onnx_bytes).toBe(100_003);
    const res = await fetch(await linkFor(h, model));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/octet-stream/);
    expect(res.headers.get('content-length')).toBe('100003');
    const body = await readAll(res);
    expect(body.length).toBe(100_003);
    expect(body.equals(modelBytesAt(model.id, 0, 100_003))).toBe(true);
  });

  it('gives different models different bytes', async () => {
    const h = await start({ modelBytes: 64 });
    const a = await doneModel(h);
    const b = await doneModel(h);
    const bytesA = await readAll(await fetch(await linkFor(h, a)));
    const bytesB = await readAll(await fetch(await linkFor(h, b)));
    expect(bytesA.equals(bytesB)).toBe(false);
  });

  it('answers Range bytes=N- with 206, Content-Range and the tail bytes', async () => {
    const h = await start({ modelBytes: 10_000 });
    const model = await doneModel(h);
    const res = await fetch(await linkFor(h, model), { headers: { range: 'bytes=4097-' } });
    expect(res.status).toBe(206);
    expect(res.headers.get('content-range')).toBe('bytes 4097-9999/10000');
    expect(res.headers.get('content-length')).toBe(String(10_000 - 4097));
    const body = await readAll(res);
    expect(body.equals(modelBytesAt(model.id, 4097, 10_000 - 4097))).toBe(true);
  });

  it('answers Range bytes=N-M with 206 and exactly those bytes', async () => {
    const h = await start({ modelBytes: 10_000 });
    const model = await doneModel(h);
    const res = await fetch(await linkFor(h, model), { headers: { range: 'bytes=3-10' } });
    expect(res.status).toBe(206);
    expect(res.headers.get('content-range')).toBe('bytes 3-10/10000');
    const body = await readAll(res);
    expect(body.equals(modelBytesAt(model.id, 3, 8))).toBe(true);
  });

  it('answers an unsatisfiable range with 416 invalid_request', async () => {
    const h = await start({ modelBytes: 10_000 });
    const model = await doneModel(h);
    const url = await linkFor(h, model);
    expectError(
      await readResponse(await fetch(url, { headers: { range: 'bytes=10000-' } })),
      416,
      'invalid_request',
    );
    expectError(
      await readResponse(await fetch(url, { headers: { range: 'bytes=20000-' } })),
      416,
      'invalid_request',
    );
  });

  it('refuses an Authorization header with 400 invalid_request', async () => {
    const h = await start();
    const model = await doneModel(h);
    const res = await fetch(await linkFor(h, model), {
      headers: { authorization: `Bearer ${h.service.apiKey}` },
    });
    expectError(await readResponse(res), 400, 'invalid_request');
  });

  it('expires after downloadUrlTtlMs with 403 url_expired', async () => {
    const h = await start({ downloadUrlTtlMs: 15 * MINUTE });
    const model = await doneModel(h);
    const url = await linkFor(h, model);
    h.service.clock.advance(15 * MINUTE - 1);
    expect((await fetch(url, { headers: { range: 'bytes=0-0' } })).status).toBe(206);
    h.service.clock.advance(1);
    expectError(await readResponse(await fetch(url)), 403, 'url_expired');
    // A fresh link works again.
    expect((await fetch(await linkFor(h, model), { headers: { range: 'bytes=0-0' } })).status).toBe(206);
  });

  it('refuses a tampered link with 403 url_expired', async () => {
    const h = await start();
    const model = await doneModel(h);
    expectError(await readResponse(await fetch(tamperUrl(await linkFor(h, model)))), 403, 'url_expired');
  });

  it('serves a 1 TiB model: headers, first bytes and a tail at once (the file is generated as it is read)', async () => {
    // The file is never materialised: a server that built or buffered 1 TiB could not answer at
    // all. (bench/transfers.ts serves 1 GiB models through it, measuring the client's side.)
    const size = 2 ** 40;
    const h = await start({ modelBytes: size });
    const model = await doneModel(h);
    expect(model.onnx_bytes).toBe(size);
    const url = await linkFor(h, model);

    const controller = new AbortController();
    const res = await fetch(url, { signal: controller.signal });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe(String(size));
    const reader = res.body!.getReader() as ReadableStreamDefaultReader<Uint8Array>;
    const head: Uint8Array[] = [];
    let received = 0;
    // Bounded: every read returns at least one byte, and we stop after 1 MiB.
    while (received < 1024 * 1024) {
      const { done, value } = await reader.read();
      if (done) break;
      head.push(value);
      received += value.byteLength;
    }
    controller.abort();
    const first = Buffer.concat(head).subarray(0, 1024 * 1024);
    expect(first.equals(modelBytesAt(model.id, 0, 1024 * 1024))).toBe(true);

    const tail = await fetch(url, { headers: { range: `bytes=${size - 1000}-` } });
    expect(tail.status).toBe(206);
    expect(tail.headers.get('content-range')).toBe(`bytes ${size - 1000}-${size - 1}/${size}`);
    expect((await readAll(tail)).equals(modelBytesAt(model.id, size - 1000, 1000))).toBe(true);
  });
  it('generates model bytes only as fast as the reader takes them (backpressure)', async () => {
    // A reader that stops after the first chunk: with backpressure the server stops within a few
    // socket buffers (~1.6 MiB measured on Node 20-24); a server that ignores write()'s answer
    // but yields between chunks piles up ~150 MiB in the second the reader waits.
    const h = await start({ modelBytes: 2 ** 40 });
    const model = await doneModel(h);
    const controller = new AbortController();
    const res = await fetch(await linkFor(h, model), { signal: controller.signal });
    const reader = res.body!.getReader() as ReadableStreamDefaultReader<Uint8Array>;
    await reader.read();
    const before = process.memoryUsage().arrayBuffers;
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const grown = process.memoryUsage().arrayBuffers - before;
    controller.abort();
    expect(grown).toBeLessThan(16 * 1024 * 1024);
  });
});

describe('faults on downloads', () => {
  it('drop: the download fails before any byte, the next one works', async () => {
    const h = await start({ modelBytes: 1000 });
    const model = await doneModel(h);
    const url = await linkFor(h, model);
    h.service.configure({ faults: [{ endpoint: 'fileDownload', kind: 'drop', count: 1 }] });
    await expect(fetch(url)).rejects.toThrow();
    expect((await readAll(await fetch(url))).equals(modelBytesAt(model.id, 0, 1000))).toBe(true);
  });

  it('cut: headers and cutAfterBytes of body, then the socket is destroyed', async () => {
    const h = await start({ modelBytes: 1024 * 1024 });
    const model = await doneModel(h);
    const url = await linkFor(h, model);
    h.service.configure({
      faults: [{ endpoint: 'fileDownload', kind: 'cut', count: 1, cutAfterBytes: 5000 }],
    });
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe(String(1024 * 1024));
    const reader = res.body!.getReader() as ReadableStreamDefaultReader<Uint8Array>;
    let received = 0;
    const readToEnd = async (): Promise<void> => {
      // Bounded: the body is 1 MiB at most.
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        received += value.byteLength;
      }
    };
    await expect(readToEnd()).rejects.toThrow();
    expect(received).toBeLessThanOrEqual(5000);
    // count 1: the next download is whole and right.
    const whole = await readAll(await fetch(url));
    expect(whole.equals(modelBytesAt(model.id, 0, 1024 * 1024))).toBe(true);
    expect(h.service.requestCount('fileDownload')).toBe(2);
  });
});
