/**
 * poll_model: reads the model again after a Wait. The slot carries the backoff and the
 * attempts so far; the Choice after this Task routes on the model's next_action.
 */
import { defineStep } from '../run/handler.js';
import { modelSlot } from '../run/slots.js';

export const pollModelStep = defineStep('poll_model', async ({ model }, env) => {
  const client = await env.runtime.service();
  const record = await client.getModel(model.id);
  return modelSlot(record, model.attempts, model, env.runtime.now());
});
