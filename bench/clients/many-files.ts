/**
 * Measured clients of the many-files benchmark (bench/many-files.ts): upload_files for a drop of
 * many files, with its bounded concurrency or one file after another.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { inboxKey } from '../../lambdas/storage/keys.js';
import { uploadStream } from '../../lambdas/storage/multipart.js';
import { uploadFilesStepWith } from '../../lambdas/steps/upload-files.js';
import type { ClientResult, Measure } from '../harness/protocol.js';
import { connect, datasetForDrop, endpointsOf, jsonlSource, numberArg, stepEnv } from './setup.js';

function fileNames(count: number): string[] {
  return Array.from({ length: count }, (_, index) => `part-${String(index).padStart(4, '0')}.jsonl`);
}

/** Puts `count` files of `bytes` each into inbox/<drop>/ (set-up, 16 at a time). */
export async function seedFiles(args: Record<string, unknown>, measure: Measure): Promise<ClientResult> {
  const connected = await connect(endpointsOf(args));
  const count = numberArg(args, 'count');
  const bytes = numberArg(args, 'bytes');
  const names = fileNames(count);
  const { measurement } = await measure(async () => {
    let next = 0;
    const worker = async () => {
      for (let name = names[next++]; name !== undefined; name = names[next++]) {
        const key = inboxKey(String(args.drop), name);
        if (bytes > 8 * 1024 * 1024) {
          await uploadStream(connected.runtime.s3, connected.bucket, key, jsonlSource(bytes), {
            expectedBytes: bytes,
          });
        } else {
          const body = Buffer.alloc(bytes, '{"text":"a small file of the drop"}\n');
          await connected.runtime.s3.send(
            new PutObjectCommand({ Bucket: connected.bucket, Key: key, Body: body }),
          );
        }
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
  });
  return { ...measurement };
}

/** upload_files for the seeded drop, `concurrency` files at a time (1: one after another). */
export async function uploadMany(args: Record<string, unknown>, measure: Measure): Promise<ClientResult> {
  const connected = await connect(endpointsOf(args));
  const count = numberArg(args, 'count');
  const bytes = numberArg(args, 'bytes');
  const drop = String(args.drop);
  const state = await datasetForDrop(
    connected,
    drop,
    fileNames(count).map((name) => ({ name, bytes })),
  );
  const step = uploadFilesStepWith(numberArg(args, 'concurrency'));
  const { result, measurement } = await measure(() => step.run(state, stepEnv(connected.runtime)));
  if (result.nextAction === 'upload_files') throw new Error('upload_files did not send every file');
  return { ...measurement };
}
