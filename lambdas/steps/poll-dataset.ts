/**
 * poll_dataset: reads the dataset again after a Wait. The slot carries the backoff: the next
 * Wait is longer while the service stays at `wait`, never past the dataset's expiry.
 */
import type { Step } from '../run/handler.js';
import { requireSlot } from '../run/require-slot.js';
import { datasetSlot } from '../run/slots.js';

export const pollDatasetStep: Step<'dataset'> = {
  stage: 'poll_dataset',
  slot: 'dataset',
  async run(state, env) {
    const dataset = requireSlot(state, 'dataset', 'poll_dataset');
    const client = await env.runtime.service();
    const record = await client.getDataset(dataset.id);
    return datasetSlot(record, dataset, env.runtime.now());
  },
};
