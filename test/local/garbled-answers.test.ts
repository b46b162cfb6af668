/**
 * Answers garbled in transit after the service acted (an HTML 502 page from a proxy, a 200 whose
 * JSON is cut off, a 200 with an empty body), end to end in local mode: runs that meet them on
 * every endpoint still train, pay one credit each and leave no model behind at the service.
 */
import { describe, expect, it } from 'vitest';
import { TrainingServiceClient, type Model } from '../../lambdas/service-client/index.js';
import { inboxKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { finished, nextExecution, useLocalMode } from '../helpers/local-mode.js';
import { putDrop } from '../helpers/pipeline.js';
import { withTimeout } from '../../testkit/timeout.js';
import { expectSaved } from '../helpers/local-runs.js';
import { reviewsDrop } from '../helpers/fixtures.js';
import { allOf } from '../client/helpers.js';

const fixture = useLocalMode();

const RUNS = 6;
const CREDITS = 10;
const RUN_BOUND_MS = 90_000;

describe('answers garbled in transit after the service acted', () => {
  it(
    `${RUNS} of ${RUNS} runs succeed against 8% garbled answers: one credit each, no model left behind`,
    async () => {
      const local = await fixture.start({
        simulated: { credits: CREDITS, seed: 9, faults: [{ endpoint: '*', kind: 'garble', rate: 0.08 }] },
      });
      const service = local.simulated;
      if (service === undefined) throw new Error('local mode started no simulated service');
      const drops = Array.from({ length: RUNS }, (_, index) => `garbled-${index + 1}`);
      const started = drops.map((drop) => nextExecution(local, inboxKey(drop, TRAIN_JSON)));
      await Promise.all(drops.map((drop) => putDrop(local.s3.client, local.bucket, drop, reviewsDrop())));
      // Bounded: each run ends within RUN_BOUND_MS (a run takes a few seconds; the machine may be busy).
      const runs = await Promise.all(
        started.map(async ({ execution, events }) => {
          const run = await execution;
          await withTimeout(run.done, `run ${run.name} did not end`, RUN_BOUND_MS);
          return finished(local, run, events);
        }),
      );

      // The knob did its work: answers arrived garbled.
      expect(service.faultCount('garble')).toBeGreaterThanOrEqual(5);
      service.configure({ faults: [] });
      const succeeded = runs.filter((run) => run.outcome.status === 'SUCCEEDED');
      expect(
        runs.map((run) => `${run.execution.input.run.drop}: ${run.status?.error?.message ?? 'ok'}`),
      ).toEqual(drops.map((drop) => `${drop}: ok`));
      expect(succeeded).toHaveLength(RUNS);

      // Every model at the service is one of these runs' and was copied; one per dataset.
      const client = new TrainingServiceClient({ baseUrl: service.apiUrl, apiKey: service.apiKey });
      let models: Model[];
      try {
        models = await allOf(client.listModels({ limit: 100 }));
      } finally {
        await client.close();
      }
      expect(models).toHaveLength(RUNS);
      expect(new Set(models.map((model) => model.dataset_id)).size).toBe(RUNS);
      for (const run of runs) {
        const { modelId } = await expectSaved(local, run);
        expect(models.map((model) => model.id)).toContain(modelId);
      }
      expect(service.credits()).toBe(CREDITS - RUNS);
    },
    2 * RUN_BOUND_MS,
  );
});
