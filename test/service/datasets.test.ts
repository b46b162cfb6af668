/** Creating datasets, presigned uploads, completing files and the reading phase (docs/service-contract.md, B1-B3). */
import { createHash } from 'node:crypto';
import http from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import {
  CLOCK_START,
  CLOCK_START_MS,
  HOUR,
  ISO_RE,
  MINUTE,
  UUID_RE,
  api,
  completeFile,
  createDataset,
  expectError,
  expectStatus,
  fileByName,
  getDataset,
  iso,
  putFile,
  rawRequest,
  tamperUrl,
  reviewsCsv,
  uploadAndComplete,
  useHarnesses,
} from '../helpers/service-http.js';
import type { DatasetRecord, Harness, TestFile } from '../helpers/service-http.js';

const start = useHarnesses();

function createBody(files: unknown, name: unknown = 'reviews'): { body: unknown } {
  return { body: { name, files } };
}

describe('POST /v1/datasets', () => {
  it('answers 201 with the dataset record at step 1 / upload_files', async () => {
    const h = await start({ datasetTtlMs: 3 * HOUR, uploadUrlTtlMs: 20 * MINUTE });
    const res = await api<DatasetRecord>(h, 'POST', '/v1/datasets', {
      body: {
        name: 'my reviews',
        files: [
          { name: 'a.csv', bytes: 10, content_type: 'text/csv' },
          { name: 'b.jsonl', bytes: 0 },
        ],
      },
    });
    const record = expectStatus(res, 201);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(record).toMatchObject({
      kind: 'dataset',
      name: 'my reviews',
      status: 'uploading',
      step: 1,
      next_action: 'upload_files',
      created_at: CLOCK_START,
      updated_at: CLOCK_START,
      expires_at: iso(CLOCK_START_MS + 3 * HOUR),
      error: null,
    });
    expect(record.id).toMatch(UUID_RE);
    expect(record.files).toHaveLength(2);
    const [a, b] = record.files;
    expect(a).toMatchObject({ name: 'a.csv', bytes: 10, status: 'pending' });
    expect(b).toMatchObject({ name: 'b.jsonl', bytes: 0, status: 'pending' });
    for (const file of record.files) {
      expect(file.id).toEqual(expect.any(String));
      expect(file.upload_url!.startsWith(h.service.fileUrl)).toBe(true);
      expect(file.upload_expires_at).toBe(iso(CLOCK_START_MS + 20 * MINUTE));
    }
    expect(a!.id).not.toBe(b!.id);
    expect(a!.upload_url).not.toBe(b!.upload_url);
  });

  it('accepts the bounds: name of 200 chars, 1000 files, 255-char file name', async () => {
    const h = await start();
    const files = Array.from({ length: 1000 }, (_, i) => ({ name: `f${i}.csv`, bytes: 1 }));
    files[0] = { name: `${'x'.repeat(251)}.csv`, bytes: 1 };
    const record = expectStatus(
      await api<DatasetRecord>(h, 'POST', '/v1/datasets', createBody(files, 'n'.repeat(200))),
      201,
    );
    expect(record.files).toHaveLength(1000);
    const emoji = await api<DatasetRecord>(h, 'POST', '/v1/datasets', createBody(files, '😀'.repeat(100)));
    expect(expectStatus(emoji, 201).name).toBe('😀'.repeat(100));
  });

  const invalidBodies: [string, unknown][] = [
    ['empty name', { name: '', files: [{ name: 'a.csv', bytes: 1 }] }],
    ['name of 201 chars', { name: 'n'.repeat(201), files: [{ name: 'a.csv', bytes: 1 }] }],
    // The contract's unit is the UTF-16 code unit (MAX_DATASET_NAME_LENGTH): 101 emoji are 202.
    [
      'name of 101 emoji (202 UTF-16 units)',
      { name: '😀'.repeat(101), files: [{ name: 'a.csv', bytes: 1 }] },
    ],
    ['name not a string', { name: 5, files: [{ name: 'a.csv', bytes: 1 }] }],
    ['missing name', { files: [{ name: 'a.csv', bytes: 1 }] }],
    ['missing files', { name: 'x' }],
    ['no files', { name: 'x', files: [] }],
    [
      '1001 files',
      { name: 'x', files: Array.from({ length: 1001 }, (_, i) => ({ name: `f${i}`, bytes: 1 })) },
    ],
    ['files not an array', { name: 'x', files: { name: 'a.csv', bytes: 1 } }],
    ['file name with a slash', { name: 'x', files: [{ name: 'dir/a.csv', bytes: 1 }] }],
    ['file name with a backslash', { name: 'x', files: [{ name: 'dir\\a.csv', bytes: 1 }] }],
    ['file name ..', { name: 'x', files: [{ name: '..', bytes: 1 }] }],
    ['file name with ..', { name: 'x', files: [{ name: 'a..b.csv', bytes: 1 }] }],
    ['file name .', { name: 'x', files: [{ name: '.', bytes: 1 }] }],
    ['empty file name', { name: 'x', files: [{ name: '', bytes: 1 }] }],
    ['file name of 256 chars', { name: 'x', files: [{ name: 'f'.repeat(256), bytes: 1 }] }],
    [
      'duplicate file names',
      {
        name: 'x',
        files: [
          { name: 'a.csv', bytes: 1 },
          { name: 'a.csv', bytes: 2 },
        ],
      },
    ],
    ['negative bytes', { name: 'x', files: [{ name: 'a.csv', bytes: -1 }] }],
    ['fractional bytes', { name: 'x', files: [{ name: 'a.csv', bytes: 1.5 }] }],
    ['bytes as a string', { name: 'x', files: [{ name: 'a.csv', bytes: '3' }] }],
    ['missing bytes', { name: 'x', files: [{ name: 'a.csv' }] }],
    ['content_type not a string', { name: 'x', files: [{ name: 'a.csv', bytes: 1, content_type: 1 }] }],
    ['unknown field on a file', { name: 'x', files: [{ name: 'a.csv', bytes: 1, path: '/tmp' }] }],
    ['unknown top-level field', { name: 'x', files: [{ name: 'a.csv', bytes: 1 }], tags: [] }],
    ['an array body', [{ name: 'x' }]],
    ['a string body', 'x'],
    ['a null body', null],
  ];
  it.each(invalidBodies)('refuses %s with 400 invalid_request', async (_label, body) => {
    const h = await start();
    expectError(await api(h, 'POST', '/v1/datasets', { body }), 400, 'invalid_request');
  });

  it('refuses malformed JSON and an empty body with 400 invalid_request', async () => {
    const h = await start();
    expectError(await api(h, 'POST', '/v1/datasets', { rawBody: '{"name": ' }), 400, 'invalid_request');
    expectError(await api(h, 'POST', '/v1/datasets'), 400, 'invalid_request');
  });

  it('GET /v1/datasets/{id} of an unknown id answers 404 not_found', async () => {
    const h = await start();
    expectError(await api(h, 'GET', '/v1/datasets/00000000-0000-4000-8000-000000000000'), 404, 'not_found');
  });
});

describe('presigned upload (PUT upload_url)', () => {
  const content = 'id,text\n1,hello\n';

  async function oneFile(h: Harness): Promise<DatasetRecord> {
    return createDataset(h, [{ name: 'a.csv', content }]);
  }

  it('accepts the declared bytes without auth and answers 200 {}', async () => {
    const h = await start();
    const ds = await oneFile(h);
    const res = await putFile(ds.files[0]!.upload_url!, content);
    expect(expectStatus(res, 200)).toEqual({});
    // Bytes received do not change the file's status; complete does.
    expect((await getDataset(h, ds.id)).files[0]!.status).toBe('pending');
  });

  it('records the received bytes and their sha256 (fileDigest)', async () => {
    const h = await start();
    const ds = await oneFile(h);
    expect(h.service.fileDigest(ds.id, 'a.csv')).toBeUndefined();
    expectStatus(await putFile(ds.files[0]!.upload_url!, content), 200);
    expect(h.service.fileDigest(ds.id, 'a.csv')).toEqual({
      bytes: Buffer.byteLength(content),
      sha256: createHash('sha256').update(content).digest('hex'),
    });
    expect(h.service.fileDigest(ds.id, 'other.csv')).toBeUndefined();
  });

  it('takes a 200 MB upload streamed in, counts every byte, and reads it', async () => {
    const lineBytes = 1024;
    const linesPerChunk = 1024;
    const chunks = 200;
    const size = lineBytes * linesPerChunk * chunks;
    const line = (n: number): string => {
      const head = `{"text":"row ${n} `;
      return `${head}${'x'.repeat(lineBytes - head.length - 3)}"}\n`;
    };
    const h = await start({ heldOutCount: 3 });
    const ds = expectStatus(
      await api<DatasetRecord>(h, 'POST', '/v1/datasets', {
        body: { name: 'big', files: [{ name: 'big.jsonl', bytes: size }] },
      }),
      201,
    );
    function* body(): Generator<string> {
      for (let c = 0; c < chunks; c++) {
        let text = '';
        for (let i = 1; i <= linesPerChunk; i++) text += line(c * linesPerChunk + i);
        yield text;
      }
    }
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(ds.files[0]!.upload_url!, {
        method: 'PUT',
        headers: { 'content-length': String(size) },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      pipeline(Readable.from(body()), req).catch(reject);
    });
    expect(status).toBe(200);
    expect(h.service.fileDigest(ds.id, 'big.jsonl')?.bytes).toBe(size);

    expectStatus(await completeFile(h, ds.id, ds.files[0]!.id), 200);
    h.service.clock.advance(h.options.readingMs);
    expect(await getDataset(h, ds.id)).toMatchObject({ status: 'read', next_action: 'structure' });
  });

  it.each(['a.csv', 'a.jsonl'])(
    'takes an 8 MiB %s without any newline and reports it unreadable at the 256 KiB row limit',
    async (name) => {
      // The reader gives up on a row at 256 KiB, which bounds what one row can cost in time and memory.
      const h = await start();
      const content = Buffer.alloc(8 * 1024 * 1024, 'a');
      const ds = await createDataset(h, [{ name, content }]);
      expectStatus(await putFile(ds.files[0]!.upload_url!, content), 200);
      expect(h.service.fileDigest(ds.id, name)?.bytes).toBe(content.length);
      expectStatus(await completeFile(h, ds.id, ds.files[0]!.id), 200);
      h.service.clock.advance(h.options.readingMs);
      const read = await getDataset(h, ds.id);
      expect(read).toMatchObject({ status: 'unreadable', next_action: 'start_over' });
      expect(read.error).toMatch(
        new RegExp(`^${name.replace('.', '\\.')}: (header|line 1): longer than 262144 bytes$`),
      );
    },
  );

  it('refuses an Authorization header with 400 invalid_request', async () => {
    const h = await start();
    const ds = await oneFile(h);
    const res = await putFile(ds.files[0]!.upload_url!, content, {
      authorization: `Bearer ${h.service.apiKey}`,
    });
    expectError(res, 400, 'invalid_request');
    expectError(await completeFile(h, ds.id, ds.files[0]!.id), 409, 'not_uploaded');
  });

  it('refuses a chunked body without Content-Length with 400 invalid_request', async () => {
    const h = await start();
    const ds = await oneFile(h);
    const res = await rawRequest(ds.files[0]!.upload_url!, 'PUT', ['id,text\n', '1,hello\n']);
    expectError(res, 400, 'invalid_request');
  });

  it('refuses a body whose length differs from the declared bytes with 400 size_mismatch', async () => {
    const h = await start();
    const ds = await oneFile(h);
    expectError(await putFile(ds.files[0]!.upload_url!, content + 'extra'), 400, 'size_mismatch');
    expectError(await putFile(ds.files[0]!.upload_url!, content.slice(1)), 400, 'size_mismatch');
    expectError(await completeFile(h, ds.id, ds.files[0]!.id), 409, 'not_uploaded');
  });

  it('accepts a zero-byte file with Content-Length 0', async () => {
    const h = await start();
    const ds = await createDataset(h, [{ name: 'empty.csv', content: '' }]);
    const res = await rawRequest(ds.files[0]!.upload_url!, 'PUT', [], { 'content-length': '0' });
    expectStatus(res, 200);
    expectStatus(await completeFile(h, ds.id, ds.files[0]!.id), 200);
  });

  it('expires after upload_expires_at with 403 url_expired; GET dataset re-issues a working URL', async () => {
    const h = await start({ uploadUrlTtlMs: 10 * MINUTE });
    const ds = await oneFile(h);
    const oldUrl = ds.files[0]!.upload_url!;
    h.service.clock.advance(10 * MINUTE - 1);
    h.service.clock.advance(1);
    expectError(await putFile(oldUrl, content), 403, 'url_expired');

    const fresh = await getDataset(h, ds.id);
    const file = fresh.files[0]!;
    expect(file.status).toBe('pending');
    expect(file.upload_expires_at).toBe(iso(CLOCK_START_MS + 20 * MINUTE));
    expectStatus(await putFile(file.upload_url!, content), 200);
    expect(expectStatus(await completeFile(h, ds.id, file.id), 200)).toMatchObject({ id: ds.id });
  });

  it('is still valid just before upload_expires_at', async () => {
    const h = await start({ uploadUrlTtlMs: 10 * MINUTE });
    const ds = await oneFile(h);
    h.service.clock.advance(10 * MINUTE - 1);
    expectStatus(await putFile(ds.files[0]!.upload_url!, content), 200);
  });

  it('refuses a tampered URL with 403 url_expired', async () => {
    const h = await start();
    const ds = await oneFile(h);
    expectError(await putFile(tamperUrl(ds.files[0]!.upload_url!), content), 403, 'url_expired');
  });

  it('refuses an upload once the dataset has expired with 403 url_expired', async () => {
    const h = await start({ datasetTtlMs: 5 * MINUTE, uploadUrlTtlMs: HOUR });
    const ds = await oneFile(h);
    h.service.clock.advance(5 * MINUTE);
    expectError(await putFile(ds.files[0]!.upload_url!, content), 403, 'url_expired');
  });

  it('refuses an upload to a completed file with 409 conflict', async () => {
    const h = await start();
    const ds = await oneFile(h);
    const url = ds.files[0]!.upload_url!;
    expectStatus(await putFile(url, content), 200);
    expectStatus(await completeFile(h, ds.id, ds.files[0]!.id), 200);
    expectError(await putFile(url, content), 409, 'conflict');
  });
});

describe('POST /v1/datasets/{id}/files/{file_id}/complete', () => {
  const files: TestFile[] = [
    { name: 'a.csv', content: reviewsCsv(3) },
    { name: 'b.csv', content: 'text\nsecond file row\n' },
  ];

  it('marks the file uploaded, drops its upload URL, and is idempotent', async () => {
    const h = await start();
    const ds = await createDataset(h, files);
    const a = fileByName(ds, 'a.csv');
    expectStatus(await putFile(a.upload_url!, files[0]!.content), 200);
    h.service.clock.advance(1000);
    const after = expectStatus(await completeFile(h, ds.id, a.id), 200) as DatasetRecord;
    expect(after).toMatchObject({
      kind: 'dataset',
      id: ds.id,
      status: 'uploading',
      step: 1,
      next_action: 'upload_files',
    });
    const done = fileByName(after, 'a.csv');
    expect(done.status).toBe('uploaded');
    expect(done).not.toHaveProperty('upload_url');
    expect(done).not.toHaveProperty('upload_expires_at');
    expect(fileByName(after, 'b.csv').status).toBe('pending');

    const again = expectStatus(await completeFile(h, ds.id, a.id), 200) as DatasetRecord;
    expect(fileByName(again, 'a.csv').status).toBe('uploaded');
    expect(again.status).toBe('uploading');
    // GET issues no upload URL for a completed file.
    expect(fileByName(await getDataset(h, ds.id), 'a.csv')).not.toHaveProperty('upload_url');
  });

  it('answers 409 not_uploaded before the bytes arrived', async () => {
    const h = await start();
    const ds = await createDataset(h, files);
    expectError(await completeFile(h, ds.id, fileByName(ds, 'a.csv').id), 409, 'not_uploaded');
  });

  it('answers 404 not_found for an unknown file id or dataset', async () => {
    const h = await start();
    const ds = await createDataset(h, files);
    expectError(await completeFile(h, ds.id, 'no-such-file'), 404, 'not_found');
    // The file NAME is not its id.
    expectError(await completeFile(h, ds.id, 'a.csv'), 404, 'not_found');
    expectError(
      await completeFile(h, '00000000-0000-4000-8000-000000000000', fileByName(ds, 'a.csv').id),
      404,
      'not_found',
    );
  });

  it('takes an empty body or {} and refuses any other body with 400 invalid_request', async () => {
    const h = await start();
    const ds = await createDataset(h, files);
    const a = fileByName(ds, 'a.csv');
    expectStatus(await putFile(a.upload_url!, files[0]!.content), 200);
    const path = `/v1/datasets/${ds.id}/files/${a.id}/complete`;
    expectError(await api(h, 'POST', path, { body: { force: true } }), 400, 'invalid_request');
    expectError(await api(h, 'POST', path, { rawBody: 'not json' }), 400, 'invalid_request');
    expectStatus(await api(h, 'POST', path, { body: {} }), 200);
    expectStatus(await api(h, 'POST', path), 200);
  });

  it('answers 409 conflict once the dataset has expired', async () => {
    const h = await start({ datasetTtlMs: HOUR });
    const ds = await createDataset(h, files);
    const a = fileByName(ds, 'a.csv');
    expectStatus(await putFile(a.upload_url!, files[0]!.content), 200);
    h.service.clock.advance(HOUR);
    expectError(await completeFile(h, ds.id, a.id), 409, 'conflict');
  });

  it('moves the dataset to reading/wait (step 1) when the last file completes, then to read/structure (step 2)', async () => {
    const h = await start({ readingMs: 3000 });
    const ds = await createDataset(h, files);
    const last = await uploadAndComplete(h, ds, files);
    expect(last).toMatchObject({ status: 'reading', step: 1, next_action: 'wait', error: null });
    h.service.clock.advance(2999);
    expect(await getDataset(h, ds.id)).toMatchObject({ status: 'reading', step: 1, next_action: 'wait' });
    h.service.clock.advance(1);
    const read = await getDataset(h, ds.id);
    expect(read).toMatchObject({ status: 'read', step: 2, next_action: 'structure', error: null });
    expect(read.updated_at).toMatch(ISO_RE);
    expect(read.files.every((f) => f.status === 'uploaded')).toBe(true);
  });
});

describe('dataset expiry', () => {
  it('shows expired (step unchanged) at expires_at, still answers GET and refuses actions', async () => {
    const h = await start({ datasetTtlMs: HOUR });
    const files = [{ name: 'a.csv', content: reviewsCsv(2) }];
    const ds = await createDataset(h, files);
    h.service.clock.advance(HOUR - 1);
    expect(await getDataset(h, ds.id)).toMatchObject({ status: 'uploading', next_action: 'upload_files' });
    h.service.clock.advance(1);
    const expired = await getDataset(h, ds.id);
    expect(expired).toMatchObject({ status: 'expired', step: 1, next_action: 'expired' });
    expect(expired.expires_at).toBe(iso(CLOCK_START_MS + HOUR));
  });
});
