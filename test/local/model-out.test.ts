import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { CopySlot } from '../../lambdas/core/state/index.js';
import { modelFileKey, modelRecordKey } from '../../lambdas/storage/keys.js';
import { copyModelOut } from '../../local/cli/out-folder.js';
import { localS3Client, startLocalS3, type LocalS3 } from '../../local/s3/local-s3.js';
import { uniqueDrop } from '../helpers/fixtures.js';

let local: LocalS3;
beforeAll(async () => {
  local = await startLocalS3();
});
afterAll(async () => {
  await local.close();
});

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function outFolder(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'hopper-model-out-test-'));
  cleanups.push(() => rm(root, { recursive: true, force: true }));
  return join(root, 'out', 'reviews');
}

interface StoredModel {
  readonly copy: CopySlot;
  readonly onnx: Buffer;
  readonly record: Buffer;
}

/** A model as the copy step leaves it in the bucket (`put: false` leaves that object out). */
async function storedModel(put: { onnx?: boolean; record?: boolean } = {}): Promise<StoredModel> {
  const drop = uniqueDrop('model-out');
  const onnx = randomBytes(2 * 1024 * 1024 + 3);
  const record = Buffer.from(`${JSON.stringify({ id: 'md_1', drop, bytes: onnx.length }, null, 2)}\n`);
  const copy: CopySlot = {
    modelKey: modelFileKey(drop, 'md_1'),
    recordKey: modelRecordKey(drop, 'md_1'),
    bytes: onnx.length,
  };
  if (put.onnx !== false) await putObject(copy.modelKey, onnx);
  if (put.record !== false) await putObject(copy.recordKey, record);
  return { copy, onnx, record };
}

async function putObject(key: string, body: Buffer): Promise<void> {
  await local.client.send(new PutObjectCommand({ Bucket: local.bucket, Key: key, Body: body }));
}

type Observer = (key: string) => void | Promise<void>;

/**
 * A client of the local S3 server that calls `beforeGet(key)` as each GetObject starts, and can
 * cut the body of `cut.key` short after `cut.bytes` bytes (a connection lost mid-download).
 */
function observedClient(beforeGet: Observer, cut?: { key: string; bytes: number }): S3Client {
  const client = localS3Client(local.endpoint);
  cleanups.push(() => {
    client.destroy();
  });
  client.middlewareStack.add(
    (next) => async (args) => {
      const key = (args.input as { Key?: string }).Key ?? '';
      await beforeGet(key);
      const result = await next(args);
      if (cut?.key === key) {
        const output = result.output as { Body?: unknown };
        if (!(output.Body instanceof Readable)) throw new Error('expected a stream body');
        output.Body = cutShort(output.Body, cut.bytes);
      }
      return result;
    },
    { step: 'initialize', name: 'observeGets' },
  );
  return client;
}

/** `body`'s first `bytes` bytes, then an error, as a dropped connection ends a download. */
function cutShort(body: Readable, bytes: number): Readable {
  return Readable.from(
    (async function* () {
      let sent = 0;
      for await (const chunk of body as AsyncIterable<Buffer>) {
        const part = chunk.subarray(0, Math.max(0, bytes - sent));
        if (part.length > 0) yield part;
        sent += part.length;
        if (sent >= bytes) break;
      }
      body.destroy();
      throw new Error('connection reset (simulated)');
    })(),
  );
}

describe('copyModelOut', () => {
  it('copies model.onnx and model.json byte for byte into the folder it makes', async () => {
    const model = await storedModel();
    const folder = await outFolder();
    const written = await copyModelOut(local.client, local.bucket, model.copy, folder);
    expect(written).toEqual({
      folder,
      onnx: join(folder, 'model.onnx'),
      record: join(folder, 'model.json'),
      bytes: model.onnx.length,
    });
    expect((await readFile(written.onnx)).equals(model.onnx)).toBe(true);
    expect((await readFile(written.record)).equals(model.record)).toBe(true);
    expect((await readdir(folder)).sort()).toEqual(['model.json', 'model.onnx']);
  });

  it('writes model.json only once model.onnx is whole at its place', async () => {
    const model = await storedModel();
    const folder = await outFolder();
    const seen: { key: string; onnx: boolean; record: boolean }[] = [];
    const client = observedClient(async (key) => {
      const onnx = existsSync(join(folder, 'model.onnx'))
        ? (await readFile(join(folder, 'model.onnx'))).equals(model.onnx)
        : false;
      seen.push({ key, onnx, record: existsSync(join(folder, 'model.json')) });
    });
    await copyModelOut(client, local.bucket, model.copy, folder);
    expect(seen).toEqual([
      { key: model.copy.modelKey, onnx: false, record: false },
      { key: model.copy.recordKey, onnx: true, record: false },
    ]);
  });

  it('removes an old model.json before the new model.onnx lands', async () => {
    const model = await storedModel();
    const folder = await outFolder();
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, 'model.onnx'), 'old model');
    await writeFile(join(folder, 'model.json'), '{"id":"old"}\n');
    const recordAtModelGet: boolean[] = [];
    const client = observedClient((key) => {
      if (key === model.copy.modelKey) recordAtModelGet.push(existsSync(join(folder, 'model.json')));
    });
    await copyModelOut(client, local.bucket, model.copy, folder);
    expect(recordAtModelGet).toEqual([false]);
    expect((await readFile(join(folder, 'model.onnx'))).equals(model.onnx)).toBe(true);
    expect((await readFile(join(folder, 'model.json'))).equals(model.record)).toBe(true);
  });

  it('rejects for a model.onnx missing from the bucket and leaves neither a partial file nor model.json', async () => {
    const model = await storedModel({ onnx: false });
    const folder = await outFolder();
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, 'model.json'), '{"id":"old"}\n');
    await expect(copyModelOut(local.client, local.bucket, model.copy, folder)).rejects.toThrow();
    expect(await readdir(folder)).toEqual([]);
  });

  it('rejects for a model.json missing from the bucket and leaves no model.json', async () => {
    const model = await storedModel({ record: false });
    const folder = await outFolder();
    await expect(copyModelOut(local.client, local.bucket, model.copy, folder)).rejects.toThrow();
    expect(await readdir(folder)).toEqual(['model.onnx']);
  });

  it('lets two copies into one folder at once each finish: no temporary name is shared', async () => {
    const [first, second] = [await storedModel(), await storedModel()];
    const folder = await outFolder();
    const copies = await Promise.allSettled([
      copyModelOut(local.client, local.bucket, first.copy, folder),
      copyModelOut(local.client, local.bucket, second.copy, folder),
    ]);
    expect(copies.map((copy) => copy.status)).toEqual(['fulfilled', 'fulfilled']);
    // Which one landed last is a race (out-folder.ts's lock keeps runs from racing); no temporary
    // file is left, and model.onnx is whole, one of the two.
    expect((await readdir(folder)).sort()).toEqual(['model.json', 'model.onnx']);
    const onnx = await readFile(join(folder, 'model.onnx'));
    expect(onnx.equals(first.onnx) || onnx.equals(second.onnx)).toBe(true);
  });

  it('removes the partial file of a download cut short and keeps the model it was replacing', async () => {
    const model = await storedModel();
    const folder = await outFolder();
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, 'model.onnx'), 'old model');
    await writeFile(join(folder, 'model.json'), '{"id":"old"}\n');
    const client = observedClient(() => undefined, { key: model.copy.modelKey, bytes: 100_000 });
    await expect(copyModelOut(client, local.bucket, model.copy, folder)).rejects.toThrow(/simulated/);
    // Without model.json the folder does not claim a whole model; the old model.onnx is intact.
    expect(await readdir(folder)).toEqual(['model.onnx']);
    expect(await readFile(join(folder, 'model.onnx'), 'utf8')).toBe('old model');
  });
});
