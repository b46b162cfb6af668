/**
 * create_dataset: declares the drop's data files to the service. The dataset comes back at
 * `upload_files`, and the Choice after this Task sends the run to UploadFiles. A resuming run
 * (train.json `"resume": true`) takes its failed run's dataset instead, once the service shows it
 * ready to train, and the Choice sends it straight to StartTraining (lambdas/run/lock/resume.ts).
 */
import { defineStep } from '../run/invocation/index.js';
import { resumableDataset } from '../run/lock/index.js';
import { datasetSlot } from '../run/state/index.js';

export const createDatasetStep = defineStep('create_dataset', async (state, env) => {
  const { config } = state;
  const client = await env.runtime.service();
  if (config.resumeFrom !== undefined) {
    const dataset = await resumableDataset(client, config.resumeFrom, env.runtime.now(), config.files);
    return datasetSlot(dataset, state.dataset, env.runtime.now());
  }
  // Not idempotent: a Lambda retried after the service acted (or the client's own retry of a
  // dropped answer) creates a second dataset. That is harmless: a dataset costs no credit, the
  // orphan is never used, and the service deletes it when it expires.
  const record = await client.createDataset({
    name: config.name,
    files: config.files.map((file) => ({ name: file.name, bytes: file.bytes })),
  });
  return datasetSlot(record, state.dataset, env.runtime.now());
});
