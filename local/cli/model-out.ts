/**
 * `hopper run`'s last step: the model the run copied into the local bucket, copied once more to
 * <out>/<drop>/ on disk. Each file streams to a temporary name of its own and is renamed into
 * place, and model.json goes last: a folder with model.json in it holds a whole model. (Two runs
 * writing one folder at once are kept apart by out-folder.ts's lock.)
 */
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { CopySlot } from '../../lambdas/run/state.js';

/** The files of a model in <out>/<drop>/, in the order they are written. */
export const MODEL_FILES = ['model.onnx', 'model.json'] as const;

export interface ModelOnDisk {
  readonly folder: string;
  readonly onnx: string;
  readonly record: string;
  readonly bytes: number;
}

export async function copyModelOut(
  s3: S3Client,
  bucket: string,
  copy: CopySlot,
  folder: string,
): Promise<ModelOnDisk> {
  await mkdir(folder, { recursive: true });
  const [onnx, record] = MODEL_FILES.map((name) => join(folder, name)) as [string, string];
  // A model.json left from an earlier run would vouch for a model.onnx not yet replaced.
  await rm(record, { force: true });
  await download(s3, bucket, copy.modelKey, onnx);
  await download(s3, bucket, copy.recordKey, record);
  return { folder, onnx, record, bytes: copy.bytes };
}

async function download(s3: S3Client, bucket: string, key: string, path: string): Promise<void> {
  // A name no other writer uses: a shared one lets one writer rename away the other's bytes.
  const partial = `${path}.${String(process.pid)}-${randomUUID()}.partial`;
  try {
    const answer = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    if (!(answer.Body instanceof Readable)) throw new Error(`s3://${bucket}/${key} has no body`);
    await pipeline(answer.Body, createWriteStream(partial));
    await rename(partial, path);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
}
