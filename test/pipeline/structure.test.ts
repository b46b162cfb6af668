import { describe, expect, it } from 'vitest';
import { toRunError } from '../../lambdas/core/errors/index.js';
import { datasetSlot } from '../../lambdas/core/state/index.js';
import type { Decisions } from '../../lambdas/core/state/index.js';
import { ConflictError } from '../../lambdas/service-client/index.js';
import { orWhereItIsNow, structureStep } from '../../lambdas/steps/structure.js';
import type { SimulatedServiceOptions } from '../../local/service/index.js';
import { HOUR, MINUTE, rejectionOf, uploadedDataset } from '../client/helpers.js';
import { stepEnv, usePipelineFixtures } from '../helpers/pipeline.js';
import { configOf, stateOf } from '../helpers/fixtures.js';

const fixtures = usePipelineFixtures();

/** A dataset read by the service (at `structure`) and the state of a run with `decisions`. */
async function readDataset(decisions: Decisions, options: Partial<SimulatedServiceOptions> = {}) {
  const service = await fixtures.service(options);
  const runtime = fixtures.runtime(service);
  const client = await runtime.service();
  const dataset = await uploadedDataset(client);
  const state = fixtures.withDataset(service, dataset, configOf({ decisions }));
  return { service, runtime, client, dataset, state, run: () => structureStep.run(state, stepEnv(runtime)) };
}

describe('structure with decisions "service"', () => {
  it('structures with no answers; held-out examples come next', async () => {
    const { service, dataset, run } = await readDataset('service');
    const slot = await run();
    expect(slot).toMatchObject({ id: dataset.id, step: 3, status: 'labeling', nextAction: 'label_examples' });
    expect(service.requestCount('suggest')).toBe(0);
    expect(service.requestCount('structure')).toBe(1);
  });

  it('goes to start_training when no example needs a label', async () => {
    const { run } = await readDataset('service', { heldOutCount: 0 });
    expect(await run()).toMatchObject({ step: 3, status: 'ready', nextAction: 'start_training' });
  });

  it('waits while the service structures', async () => {
    const { run } = await readDataset('service', { structuringMs: MINUTE });
    expect(await run()).toMatchObject({
      step: 2,
      status: 'structuring',
      nextAction: 'wait',
      waitSeconds: 2,
      polls: 0,
      totalPolls: 1,
    });
  });

  it('a retried invocation after the structure took effect goes on from where the dataset is', async () => {
    const { service, run } = await readDataset('service', { structuringMs: MINUTE });
    await run();
    expect(await run()).toMatchObject({ status: 'structuring', nextAction: 'wait' });
    service.clock.advance(MINUTE);
    expect(await run()).toMatchObject({ nextAction: 'label_examples' });
    expect(service.requestCount('structure')).toBe(3);
  });

  it('survives an invocation whose every answer was lost after the service acted', async () => {
    const { service, run } = await readDataset('service', {
      faults: [{ endpoint: 'structure', kind: 'drop_after', count: 6 }],
    });
    const lost = toRunError(await rejectionOf(run()));
    expect(lost).toMatchObject({ code: 'service_unavailable', retryable: true });

    expect(await run()).toMatchObject({ nextAction: 'label_examples' });
    // The second invocation's structure was refused (409) and read the dataset instead.
    expect(service.requestCount('structure')).toBe(7);
  });

  it('an expired dataset is routed to expired, not failed on the conflict', async () => {
    const { service, run } = await readDataset('service');
    service.clock.advance(7 * 24 * HOUR);
    expect(await run()).toMatchObject({ status: 'expired', nextAction: 'expired', waitSeconds: 0 });
  });

  it('a conflict at a dataset not yet read routes on where the dataset is', async () => {
    // Files still pending: structure is refused, and the dataset shows upload_files.
    const service = await fixtures.service();
    const runtime = fixtures.runtime(service);
    const client = await runtime.service();
    const created = await client.createDataset({ name: 'r', files: [{ name: 'r.csv', bytes: 1 }] });
    const state = stateOf(fixtures.s3().bucket, {
      config: configOf(),
      dataset: { ...datasetSlot(created, undefined, service.clock.now()), nextAction: 'structure' },
    });
    expect(await structureStep.run(state, stepEnv(runtime))).toMatchObject({ nextAction: 'upload_files' });
  });

  it('a conflict while the dataset can still be structured is a real failure', async () => {
    const { client, dataset } = await readDataset('service');
    const conflict = new ConflictError({ message: 'conflict', endpoint: 'POST structure', status: 409 });
    expect(await rejectionOf(orWhereItIsNow(client, dataset.id, () => Promise.reject(conflict)))).toBe(
      conflict,
    );
    expect(toRunError(conflict)).toMatchObject({ code: 'service_error', retryable: false });
  });

  it('a next_action Hopper does not know fails the run, naming the value', async () => {
    const { run } = await readDataset('service', { renameNextActions: { label_examples: 'celebrate' } });
    const error = toRunError(await rejectionOf(run()));
    expect(error).toMatchObject({ code: 'unsupported_next_action' });
    expect(error.message).toContain('celebrate');
  });
});

describe.each<{ decisions: Decisions }>([{ decisions: 'suggested' }, { decisions: { language: 'multi' } }])(
  'structure with decisions $decisions',
  ({ decisions }) => {
    it('asks for suggestions; the dataset goes to pick_decisions', async () => {
      const { service, dataset, run } = await readDataset(decisions);
      const slot = await run();
      expect(slot).toMatchObject({
        id: dataset.id,
        step: 2,
        status: 'suggested',
        nextAction: 'pick_decisions',
      });
      expect(service.requestCount('suggest')).toBe(1);
      expect(service.requestCount('structure')).toBe(0);

      // Suggest is idempotent: a retried invocation lands at the same place.
      expect(await run()).toMatchObject({ nextAction: 'pick_decisions' });
    });

    it('an expired dataset is routed to expired', async () => {
      const { service, run } = await readDataset(decisions);
      service.clock.advance(7 * 24 * HOUR);
      expect(await run()).toMatchObject({ nextAction: 'expired' });
    });
  },
);
