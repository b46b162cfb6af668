/**
 * Issue 22's first edge, as a user meets it: `hopper local --data-dir D` against a training
 * service of its own is killed (-9) while a drop's model trains (paid: 1 credit). Started again,
 * it says the run was interrupted and that `hopper retry <drop>` resumes it; following that
 * advice adopts the paid model and copies it: one dataset, one training, one credit in all.
 * Issue 28's: killed while the files upload, it names that step, and the advice sends only the
 * files not completed, to the same dataset (test/local/resume-anywhere.test.ts: every step).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readStatus, type RunStatus } from '../../lambdas/records/status/index.js';
import { modelFileKey } from '../../lambdas/storage/keys.js';
import { objectSize } from '../../lambdas/storage/objects.js';
import { localS3Client } from '../../local/s3/local-s3.js';
import { startSimulatedService, type SimulatedService } from '../../local/service/index.js';
import { BRISK_SERVICE } from '../../testkit/brisk-service.js';
import { hopper, startHopper, type RunningHopper } from '../helpers/hopper-cli.js';
import { putDrop } from '../helpers/pipeline.js';
import { reviewsDrop } from '../helpers/fixtures.js';
import { TRAIN_JSON } from '../../lambdas/storage/keys.js';

let work: string;
let service: SimulatedService;
const running: RunningHopper[] = [];
beforeEach(async () => {
  work = await mkdtemp(join(tmpdir(), 'hopper-restart-advice-'));
  // Long enough to kill local mode while it trains, short enough to wait out after the restart.
  service = await startSimulatedService({
    ...BRISK_SERVICE,
    trainingMs: 6_000,
    modelBytes: 4096,
    credits: 10,
  });
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((child) => child.stop('SIGKILL')));
  await service.close();
  await rm(work, { recursive: true, force: true });
});

/** `hopper local` on D against the service, once it prints its settings: the env they give. */
async function startLocal(): Promise<{ child: RunningHopper; env: NodeJS.ProcessEnv }> {
  const child = startHopper(
    [
      'local',
      '--data-dir',
      join(work, 'data'),
      '--service-url',
      service.apiUrl,
      '--no-console',
      '--wait-ms',
      '20',
    ],
    { HOPPER_API_KEY: service.apiKey },
  );
  running.push(child);
  await child.waitFor('export HOPPER_BUCKET=', 60_000);
  const env: NodeJS.ProcessEnv = {};
  for (const [, name, value] of child.stdout().matchAll(/^export ([A-Z_]+)=(\S+)$/gm)) {
    if (name !== undefined) env[name] = value;
  }
  return { child, env };
}

/** Polls status/<drop>.json (bounded) until `done` holds. */
async function statusWhen(env: NodeJS.ProcessEnv, done: (status: RunStatus) => boolean): Promise<RunStatus> {
  const s3 = localS3Client(env.AWS_ENDPOINT_URL ?? '');
  const deadline = Date.now() + 60_000;
  for (;;) {
    const status = await readStatus(s3, env.HOPPER_BUCKET ?? '', 'slow');
    if (status !== null && done(status)) return status;
    if (Date.now() > deadline) throw new Error(`status/slow.json never got there: ${JSON.stringify(status)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function serviceIds(what: 'datasets' | 'models'): Promise<string[]> {
  const answer = await fetch(`${service.apiUrl}/v1/${what}?limit=100`, {
    headers: { authorization: `Bearer ${service.apiKey}` },
  });
  return ((await answer.json()) as { data: { id: string }[] }).data.map((record) => record.id);
}

describe('hopper local killed while a paid model trains', () => {
  it('restarts saying hopper retry; following it adopts the model: one training, one credit', async () => {
    const first = await startLocal();
    await putDrop(
      localS3Client(first.env.AWS_ENDPOINT_URL ?? ''),
      first.env.HOPPER_BUCKET ?? '',
      'slow',
      reviewsDrop(),
    );
    const training = await statusWhen(first.env, (status) => status.paid_model !== null);
    const paid = training.paid_model?.id ?? '';
    await first.child.stop('SIGKILL');

    const second = await startLocal();
    expect(second.child.stdout()).toContain('# Run of slow interrupted by the last stop: hopper retry slow');
    const interrupted = await statusWhen(second.env, (status) => status.state === 'interrupted');
    expect(interrupted.error?.message).toContain(`its model ${paid} was paid for (1 credit)`);
    expect(interrupted.error?.message).toContain('hopper retry slow adopts it');

    const retry = await hopper(['retry', 'slow'], second.env);
    expect(retry).toMatchObject({ code: 0 });
    const done = await statusWhen(second.env, (status) => status.state === 'succeeded');
    expect(done.model_id).toBe(paid);
    const s3 = localS3Client(second.env.AWS_ENDPOINT_URL ?? '');
    expect(await objectSize(s3, second.env.HOPPER_BUCKET ?? '', modelFileKey('slow', paid))).toBe(4096);
    expect(await serviceIds('models')).toEqual([paid]);
    expect(await serviceIds('datasets')).toHaveLength(1);
    expect(service.credits()).toBe(9);
  }, 180_000);

  it('killed while the files upload: names upload_files; hopper retry sends the pending file to the same dataset: one dataset, one credit', async () => {
    // The first file's bytes arrive, its answer never does: the kill finds it not completed.
    service.configure({ faults: [{ endpoint: 'fileUpload', kind: 'stall', count: 1, stallMs: 600_000 }] });
    const first = await startLocal();
    const files = {
      ...reviewsDrop(),
      'more.csv': 'id,text\nm1,Fine value for the price\n',
      'extra.csv': 'id,text\ne1,Five stars\n',
      'labels.csv': 'id,label\nr1,positive\nr2,negative\nr3,neutral\nr4,neutral\nm1,positive\ne1,positive\n',
      [TRAIN_JSON]: '{}',
    };
    await putDrop(
      localS3Client(first.env.AWS_ENDPOINT_URL ?? ''),
      first.env.HOPPER_BUCKET ?? '',
      'slow',
      files,
    );
    const deadline = Date.now() + 60_000;
    while (service.requestCount('completeFile') < 2) {
      if (Date.now() > deadline) throw new Error('the other two files never completed');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await first.child.stop('SIGKILL');

    const second = await startLocal();
    const dataset = (await serviceIds('datasets'))[0] ?? '';
    expect(second.child.stdout()).toContain('# Run of slow interrupted by the last stop: hopper retry slow');
    const interrupted = await statusWhen(second.env, (status) => status.state === 'interrupted');
    expect(interrupted.error?.message).toContain('local mode stopped while this run was at upload_files,');
    expect(interrupted.error?.message).toContain(`hopper retry slow resumes it from its dataset ${dataset}`);

    const uploads = service.requestCount('fileUpload');
    expect(await hopper(['retry', 'slow'], second.env)).toMatchObject({ code: 0 });
    const done = await statusWhen(second.env, (status) => status.state === 'succeeded');
    expect(done.dataset_id).toBe(dataset);
    expect(service.requestCount('fileUpload') - uploads).toBe(1);
    expect(await serviceIds('datasets')).toEqual([dataset]);
    expect(service.credits()).toBe(9);
  }, 180_000);
});
