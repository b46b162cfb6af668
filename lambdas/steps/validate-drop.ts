/**
 * validate_drop: reads the drop folder and the train.json that started the run, checks them and
 * returns the run's configuration ($.config) with every default applied and every file pinned
 * by size and etag, once the folder has stopped changing. The rules are in lambdas/drop/.
 * It also puts the run's Started event (lambdas/run/publish-events.ts).
 */
import { validateDrop } from '../drop/validate.js';
import { defineStep } from '../run/handler.js';
import { announceRun } from '../run/publish-events.js';

export const validateDropStep = defineStep('validate_drop', async (state, env) => {
  // First, so a drop that fails validation still has its Started event before its Failed one.
  await announceRun(state, env);
  return validateDrop(env.runtime.s3, state.run, {
    quietMs: env.runtime.dropQuietMs,
    clock: { now: () => env.runtime.now(), remainingMs: () => env.remainingMs() },
  });
});
