/**
 * poll_model: reads the model again after a Wait. The slot carries the backoff and the
 * attempts so far; the Choice after this Task routes on the model's next_action.
 */
import type { Step } from '../run/handler.js';
import { requireSlot } from '../run/require-slot.js';
import { modelSlot } from '../run/slots.js';

export const pollModelStep: Step<'model'> = {
  stage: 'poll_model',
  slot: 'model',
  async run(state, env) {
    const model = requireSlot(state, 'model', 'poll_model');
    const client = await env.runtime.service();
    const record = await client.getModel(model.id);
    return modelSlot(record, model.attempts, model, env.runtime.now());
  },
};
