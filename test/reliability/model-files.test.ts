/**
 * A paid model whose files leave the service before Hopper has copied them, end to end in local
 * mode: moved to the service's hosting right after training (hf_repo set, next_action none), or
 * expiring while the copy runs. Each run fails with model_files_gone and one true message: the
 * moved model is named where it is usable and nothing is to be paid again; the expired one says
 * its credit is spent and how to train again, never that it could still be adopted.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dropAndRun, useLocalMode } from '../helpers/local-mode.js';
import { expectFailed } from '../helpers/local-runs.js';
import { reviewsDrop } from '../helpers/fixtures.js';

const fixture = useLocalMode();
const FILES = reviewsDrop();
const HOUR = 3_600_000;
const MiB = 1024 * 1024;

describe('model files gone before the copy', { timeout: 60_000 }, () => {
  it('a model moved to the hosting service right after training: named there, usable, nothing to pay again', async () => {
    const local = await fixture.start({ simulated: { trainingMs: HOUR, credits: 5 } });
    const service = local.simulated;
    if (service === undefined) throw new Error('local mode runs the simulated service here');
    // As the training ends, the service publishes the model: its files leave at once.
    let published = false;
    local.stateMachine.on('event', (_execution, event) => {
      if (published || event.type !== 'StateEntered' || event.state.name !== 'WaitForModel') return;
      const model = (event.state.input as { model?: { id: string } }).model;
      if (model === undefined) return;
      published = true;
      // Past the queued phase too, however little real time it has had.
      service.clock.advance(HOUR + 60_000);
      service.removeModelFiles(model.id, 'moved');
    });

    const run = await dropAndRun(local, 'published', FILES);

    const status = await expectFailed(local, run, 'model_files_gone');
    const model = (await (
      await fetch(`${service.apiUrl}/v1/models/${status.model_id ?? ''}`, {
        headers: { authorization: `Bearer ${service.apiKey}` },
      })
    ).json()) as { hf_repo: string; files_deleted_at: string; files_expire_at: string };
    const message = status.error?.message ?? '';
    expect(message).toContain(`moved its files to its hosting at ${model.files_deleted_at}`);
    expect(message).toContain(`usable as ${model.hf_repo}`);
    expect(message).not.toContain(model.files_expire_at);
    expect(message).not.toContain('drop train.json again');
    expect(message).not.toContain('adopts it');
    expect(5 - service.credits()).toBe(1);
  });

  it('files expiring while the copy runs: one message, the credit spent, how to train again', async () => {
    // The first download is cut halfway; the files expire before the copy resumes it.
    const { local, service } = await startExpiringMidCopy(12 * MiB, 6 * MiB + 1);

    const run = await dropAndRun(local, 'expiring', FILES);

    const status = await expectFailed(local, run, 'model_files_gone');
    const message = status.error?.message ?? '';
    expect(message).toContain(`the files of model ${status.model_id ?? ''} went at the service`);
    expect(message).toContain('its credit is spent');
    expect(message).toContain('hopper retry expiring trains the same dataset again');
    expect(message).not.toContain('adopts it');
    expect(status.paid_model).toBeNull();
    expect(service.requestCount('fileDownload')).toBeGreaterThan(0);
  });

  it('a copy that fails after its multipart upload began leaves no parts on disk and no model', async () => {
    // Cut after two 8 MiB parts (the copy's part size) were read: the upload has begun.
    const { local } = await startExpiringMidCopy(20 * MiB, 16 * MiB + 1);

    const run = await dropAndRun(local, 'cut-mid-upload', FILES);

    // No model object (expectFailed), and the upload aborted: none of its parts left in the bucket.
    await expectFailed(local, run, 'model_files_gone');
    const uploads = join(local.s3.directory, 'objects', local.bucket, '._S3rver_uploads');
    expect(await readdir(uploads)).toEqual([]);
  });
});

/**
 * Local mode whose model of `modelBytes` is cut after `cutAfterBytes` in its first download, and
 * whose files expire before the copy can resume it.
 */
async function startExpiringMidCopy(modelBytes: number, cutAfterBytes: number) {
  let expireFiles = (): void => undefined;
  const local = await fixture.start({
    simulated: {
      modelBytes,
      credits: 5,
      faults: [{ endpoint: 'fileDownload', kind: 'cut', count: 1, cutAfterBytes }],
    },
    clientOptions: {
      sleep: () => {
        expireFiles();
        return Promise.resolve();
      },
    },
  });
  const service = local.simulated;
  if (service === undefined) throw new Error('local mode runs the simulated service here');
  expireFiles = () => {
    if (service.requestCount('fileDownload') > 0) service.clock.advance(25 * HOUR);
    expireFiles = () => undefined;
  };
  return { local, service };
}
