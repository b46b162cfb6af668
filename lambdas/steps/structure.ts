/**
 * structure: train.json's `decisions` decide how the service structures the data.
 * - "service": POST structure with no answers; the service picks for itself.
 * - "suggested" or an object of answers: POST suggest, and the dataset moves to
 *   `pick_decisions`, where the PickDecisions Task answers the questions.
 */
import type { Dataset, TrainingServiceClient } from '../service-client/index.js';
import { awaitsStructure, ConflictError } from '../service-client/index.js';
import { defineStep } from '../runtime/index.js';
import { datasetSlot } from '../core/state/index.js';

export const structureStep = defineStep('structure', async ({ config, dataset }, env) => {
  const client = await env.runtime.service();
  const record =
    config.decisions === 'service'
      ? await orWhereItIsNow(client, dataset.id, () => client.structure(dataset.id))
      : await orWhereItIsNow(client, dataset.id, async () => {
          await client.suggest(dataset.id);
          // The suggestions alone are not a record: the dataset now shows pick_decisions.
          return client.getDataset(dataset.id);
        });
  return datasetSlot(record, dataset, env.runtime.now());
});

/**
 * Runs `call` (suggest or structure). A 409 conflict says the dataset is not where the slot
 * said. Usually it has moved on: an earlier invocation's call took effect before its Lambda was
 * cut off or retried, or the dataset expired. Then its current record is the answer, and the
 * Choice after the Task routes on where the dataset really is. A conflict at a dataset that
 * still awaits structure is a real failure (awaitsStructure; beside isPastStructure, the rule the
 * client's own 409 reconciliation applies, in contract.ts).
 */
export async function orWhereItIsNow(
  client: TrainingServiceClient,
  datasetId: string,
  call: () => Promise<Dataset>,
): Promise<Dataset> {
  try {
    return await call();
  } catch (error) {
    if (!(error instanceof ConflictError)) throw error;
    const current = await client.getDataset(datasetId);
    if (awaitsStructure(current)) throw error;
    return current;
  }
}
