/**
 * Measured client of the status-latency benchmark (bench/status-latency.ts): local mode (its S3,
 * the trigger, the state machine and the real handlers, in this process, with the drop settle
 * window users get) against the simulated service in its own process. It drops a folder, then
 * uploads a changed train.json while that run is in flight, and measures for each upload how long
 * after S3 answered the PUT `hopper status` (readStatus of status/<drop>.json) names its run; and,
 * as the floor, one PutObject and one GetObject of a status file between the same endpoints.
 */
import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { readStatus } from '../../lambdas/records/status/index.js';
import { inboxKey, statusKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { startLocalMode, type LocalMode } from '../../local/emulator/local-mode.js';
import type { ClientResult, Measure } from '../harness/protocol.js';
import { numberArg } from './setup.js';

const DROP = 'latency';
const FILES: Readonly<Record<string, string>> = {
  'reviews.jsonl': '{"text":"great","label":"positive"}\n{"text":"awful","label":"negative"}\n',
};

/** Puts `body` at inbox/<drop>/train.json; resolves once S3 has answered. */
async function putTrainJson(s3: S3Client, bucket: string, body: string): Promise<void> {
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: inboxKey(DROP, TRAIN_JSON), Body: body }));
}

/** Milliseconds from now until the drop's status names a run other than `before` (bounded). */
async function untilNewRun(local: LocalMode, before: string | null, boundMs: number): Promise<string> {
  const deadline = Date.now() + boundMs;
  for (;;) {
    const status = await readStatus(local.s3.client, local.bucket, DROP);
    if (status !== null && status.run_id !== before) return status.run_id;
    if (Date.now() > deadline)
      throw new Error(`no new run in status/${DROP}.json within ${String(boundMs)} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** The two uploads, each timed from S3's answer to the PUT until the status names its run. */
export async function statusLatency(args: Record<string, unknown>, measure: Measure): Promise<ClientResult> {
  const { apiUrl, apiKey } = args;
  if (typeof apiUrl !== 'string' || typeof apiKey !== 'string')
    throw new Error('client args: apiUrl, apiKey');
  const boundMs = numberArg(args, 'boundMs');
  // The settle window users get (DROP_QUIET_MS): the status must not wait for it.
  const local = await startLocalMode({ service: { url: apiUrl, apiKey }, waitMs: 50 });
  try {
    const { client: s3 } = local.s3;
    for (const [name, body] of Object.entries(FILES)) {
      await s3.send(new PutObjectCommand({ Bucket: local.bucket, Key: inboxKey(DROP, name), Body: body }));
    }
    const timed = async (body: string, before: string | null) => {
      await putTrainJson(s3, local.bucket, body);
      const started = performance.now();
      const runId = await untilNewRun(local, before, boundMs);
      return { runId, ms: performance.now() - started };
    };
    const { result, measurement } = await measure(async () => {
      const first = await timed('{}', null);
      // While the first run waits for its folder to settle: the newer train.json takes the drop.
      const redrop = await timed('{"maxAttempts": 2}', first.runId);
      return { firstMs: first.ms, redropMs: redrop.ms };
    });
    return { ...measurement, ...result };
  } finally {
    await local.close();
  }
}

/** The floor: one status-sized PutObject and one GetObject of it, on a local S3 of its own. */
export async function writeAndRead(args: Record<string, unknown>, measure: Measure): Promise<ClientResult> {
  const { apiUrl, apiKey } = args;
  if (typeof apiUrl !== 'string' || typeof apiKey !== 'string')
    throw new Error('client args: apiUrl, apiKey');
  const local = await startLocalMode({ service: { url: apiUrl, apiKey } });
  try {
    const { client: s3 } = local.s3;
    const body = JSON.stringify({
      run_id: 'a'.repeat(73),
      state: 'running',
      step: 0,
      padding: 'x'.repeat(600),
    });
    const once = async () => {
      const started = performance.now();
      await s3.send(new PutObjectCommand({ Bucket: local.bucket, Key: statusKey(DROP), Body: body }));
      const read = await s3.send(new GetObjectCommand({ Bucket: local.bucket, Key: statusKey(DROP) }));
      await read.Body?.transformToString();
      return performance.now() - started;
    };
    const { result, measurement } = await measure(async () => ({
      firstMs: await once(),
      redropMs: await once(),
    }));
    return { ...measurement, ...result };
  } finally {
    await local.close();
  }
}
