/**
 * `hopper run` stopped mid-run (SIGINT, SIGTERM) against a training service of its own (the
 * simulated one, started here and given as --service-url, as a real one would be): the command
 * is spawned as a user runs it. Stopped, it says what it left at the service (dataset, model,
 * credits held) and what to do; run again while the stopped run's training goes on, it refuses
 * rather than spend a second credit.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSimulatedService, type SimulatedService } from '../../local/service/index.js';
import { BRISK_SERVICE } from '../../testkit/brisk-service.js';
import { hopper, startHopper } from '../helpers/hopper-cli.js';
import { reviewsDrop, writeDropFolder } from '../helpers/fixtures.js';
import { serviceList } from '../helpers/local-mode.js';
import { describeLeftovers, leftAtService } from '../../local/cli/left-at-service.js';
import { trainableDataset, useFixtures } from '../client/helpers.js';

const fixtures = useFixtures();

let work: string;
let service: SimulatedService;
beforeEach(async () => {
  work = await mkdtemp(join(tmpdir(), 'hopper-interrupt-'));
  // A training far longer than the test: it is still under way when the command is stopped.
  service = await startSimulatedService({
    ...BRISK_SERVICE,
    trainingMs: 3_600_000,
    modelBytes: 1000,
    credits: 10,
  });
});
afterEach(async () => {
  await service.close();
  await rm(work, { recursive: true, force: true });
});

function dropFolder(name: string): Promise<string> {
  return writeDropFolder(work, name, reviewsDrop());
}

/** Resolves once `count()` reaches `target` (bounded). */
async function until(count: () => number, target: number, what: string): Promise<void> {
  const deadline = Date.now() + 90_000;
  while (count() < target) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen in time`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function args(folder: string): string[] {
  return ['run', folder, '--service-url', service.apiUrl, '--out', join(work, 'out'), '--wait-ms', '20'];
}

describe('hopper run stopped mid-run, against a service of its own', () => {
  it('SIGINT while training: names the dataset, the model and the credit held; a second run refuses', async () => {
    const folder = await dropFolder('stopped');
    const env = { HOPPER_API_KEY: service.apiKey };
    const first = startHopper(args(folder), env);
    await until(() => service.requestCount('startTraining'), 1, 'a training start');
    const [model] = await serviceList<{ id: string; dataset_id: string; status: string }>(service, 'models');
    if (model === undefined) throw new Error('no model at the service');
    const stopped = await first.stop('SIGINT');

    expect(stopped.code).toBe(130);
    expect(stopped.stderr).toContain('hopper run: stopped');
    expect(stopped.stderr).toContain(`left at the training service (${service.apiUrl})`);
    // The run names its dataset for itself: train.json's name and the run's tag.
    expect(stopped.stderr).toMatch(new RegExp(`dataset ${model.dataset_id} \\("stopped · run [0-9a-f]{12}"`));
    expect(stopped.stderr).toMatch(new RegExp(`model ${model.id} \\((queued|training)\\): holds 1 credit`));
    expect(stopped.stderr).toContain('credits held: 1');
    expect(stopped.stderr).toContain(`\`hopper run ${folder}\` again will not start a second one`);
    expect(stopped.stderr).not.toContain(service.apiKey);
    expect(service.credits()).toBe(9);

    // The same folder again while that training goes on: refused, nothing created, no credit.
    const datasets = service.requestCount('createDataset');
    const second = await hopper(args(folder), env);
    expect(second.code).toBe(4);
    expect(second.stderr).toContain(`model ${model.id}`);
    expect(second.stderr).toContain(`dataset ${model.dataset_id}`);
    expect(second.stderr).toContain('would spend a second credit for the same drop, so nothing was started');
    expect(service.requestCount('createDataset')).toBe(datasets);
    expect(service.requestCount('startTraining')).toBe(1);
    expect(service.credits()).toBe(9);
  }, 240_000);

  it('SIGTERM before training: names the dataset, and says no credit was spent', async () => {
    const folder = await dropFolder('early');
    const first = startHopper(args(folder), { HOPPER_API_KEY: service.apiKey });
    await until(() => service.requestCount('createDataset'), 1, 'a dataset');
    const stopped = await first.stop('SIGTERM');

    expect(stopped.code).toBe(130);
    expect(stopped.stderr).toContain('hopper run: stopped (stopped by SIGTERM)');
    expect(stopped.stderr).toMatch(/ {2}dataset [0-9a-f-]{36} \("early · run [0-9a-f]{12}"/);
    expect(stopped.stderr).toContain('credits held: 0');
    expect(stopped.stderr).toContain('no credit was spent');
    expect(service.requestCount('startTraining')).toBe(0);
    expect(service.credits()).toBe(10);
  }, 240_000);

  it('SIGINT with the simulated service: says that service, and what the run made there, stopped with it', async () => {
    const folder = await dropFolder('simulated');
    const running = startHopper(['run', folder, '--out', join(work, 'out'), '--wait-ms', '20']);
    try {
      // The run has its dataset at the simulated service once it uploads files to it.
      await running.waitFor('UploadFiles', 60_000);
    } catch (error) {
      await running.stop();
      throw error;
    }
    const stopped = await running.stop('SIGINT');
    expect(stopped.code).toBe(130);
    expect(stopped.stderr).toContain('hopper run: stopped (stopped by SIGINT)');
    expect(stopped.stderr).toMatch(
      /hopper run: the simulated training service stopped with this command, and the run's dataset [0-9a-f-]{36} and any training it started went with it: no credit of a real service was spent\. `hopper run .+simulated` again starts over\.\n$/,
    );
    expect(stopped.stderr).not.toContain('left at the training service');
    expect(stopped.stderr).not.toContain('hopper models');
  }, 240_000);

  it('counts a credit held only for a model that holds one (contract.ts holdsCredit): one whose files moved holds none', async () => {
    const quick = await fixtures.service();
    const client = fixtures.client(quick);
    const dataset = await trainableDataset(client, 'left');
    const model = await client.startTraining(dataset.id, 'enc-small');
    quick.removeModelFiles(model.id, 'moved');
    const left = await leftAtService(client, { datasetName: 'left', knownIds: [dataset.id], since: 0 });
    const lines = describeLeftovers(left, quick.apiUrl, 'left');
    expect(lines.join('\n')).toContain(
      `model ${model.id} (done): its credit is spent and its files are gone`,
    );
    expect(lines).toContain('  credits held: 0');
  });
});
