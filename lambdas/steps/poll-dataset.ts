/**
 * poll_dataset: reads the dataset again after a Wait. The slot carries the backoff: the next
 * Wait is longer while the service stays at `wait`, never past the dataset's expiry.
 */
import { defineStep } from '../runtime/index.js';
import { datasetSlot } from '../core/state/index.js';

export const pollDatasetStep = defineStep('poll_dataset', async ({ dataset }, env) => {
  const client = await env.runtime.service();
  const record = await client.getDataset(dataset.id);
  return datasetSlot(record, dataset, env.runtime.now());
});
