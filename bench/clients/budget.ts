/**
 * Measured client of the budget benchmark (bench/budget.ts):
 *   startTrainings   start_training on `count` datasets ready to train, one after another, with a
 *                    credit budget (`budget`: the ledger's conditional take before each start) or
 *                    without one (the same step, no ledger)
 * Set-up (the datasets, an empty ledger) happens before measure().
 */
import { datasetSlot, type RunState } from '../../lambdas/core/state/index.js';
import { CREDIT_LEDGER_KEY } from '../../lambdas/storage/keys.js';
import { deleteObject } from '../../lambdas/storage/objects.js';
import { startTrainingStep } from '../../lambdas/steps/start-training.js';
import type { ClientResult, Measure } from '../harness/protocol.js';
import { connect, endpointsOf, numberArg, stepEnv, structuredDataset } from './setup.js';

export async function startTrainings(args: Record<string, unknown>, measure: Measure): Promise<ClientResult> {
  const endpoints = endpointsOf(args);
  const count = numberArg(args, 'count');
  const budget = args.budget === true;
  const connected = await connect(endpoints, budget ? { perDay: 1_000_000 } : undefined);
  const { runtime, client } = connected;
  await deleteObject(runtime.s3, endpoints.bucket, CREDIT_LEDGER_KEY);
  const states: RunState[] = [];
  for (let n = 0; n < count; n++) {
    const { run, dataset } = await structuredDataset(
      connected,
      `budget-${String(args.round)}-${String(budget)}-${String(n)}`,
    );
    // The benchmark's service reads and structures in no time; a few reads at most.
    let ready = dataset;
    for (let attempt = 0; attempt < 50 && ready.next_action !== 'start_training'; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      ready = await client.getDataset(dataset.id);
    }
    if (ready.next_action !== 'start_training') throw new Error(`dataset ${ready.id} is not ready to train`);
    states.push({
      run,
      config: {
        name: run.drop,
        files: [],
        labels: null,
        encoder: null,
        decisions: 'service',
        maxAttempts: 1,
      },
      dataset: datasetSlot(ready, undefined, Date.now()),
    });
  }
  const env = stepEnv(runtime);
  const { measurement } = await measure(async () => {
    for (const state of states) await startTrainingStep.run(state, env);
  });
  return { ...measurement, msPerStep: measurement.wallMs / count };
}
