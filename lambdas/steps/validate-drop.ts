/**
 * validate_drop: reads the drop folder and the train.json that started the run, checks them and
 * returns the run's configuration ($.config) with every default applied and every file pinned
 * by size and etag, once the folder has stopped changing. The rules are in lambdas/drop/.
 *
 * It puts the run's Started event (lambdas/run/events/publish-events.ts); its status is written
 * once, by the invocation, when it ends (one write per step). A run with the same settings as an
 * earlier run of the drop that holds a paid model, or was about to start its training, resumes
 * that run's dataset and adopts its model (lambdas/run/lock/adoption.ts): no second credit. Both read the drop's status as the invocation
 * found it.
 */
import { validateDrop } from '../drop/validate.js';
import { defineStep } from '../run/invocation/index.js';
import { announceRun } from '../run/events/index.js';
import { workToAdopt } from '../run/lock/index.js';
import { configFingerprint } from '../run/state/index.js';

export const validateDropStep = defineStep('validate_drop', async (state, env) => {
  const { s3, logger } = env.runtime;
  const { run } = state;
  // First, so a drop that fails validation still has its Started event before its Failed one.
  await announceRun(state, env);
  const previous = env.found?.status ?? null;
  const clock = { now: () => env.runtime.now(), remainingMs: () => env.remainingMs() };
  const settle = { quietMs: env.runtime.dropQuietMs, clock };
  const { config, leftOut } = await validateDrop(s3, run, settle, previous);
  if (leftOut.length > 0)
    logger.info('left out: files operating systems leave in folders', { files: leftOut });
  if (config.resumeFrom !== undefined) return config;
  const adopt = workToAdopt(previous, run.runId, configFingerprint(config));
  if (adopt === undefined) return config;
  logger.info('adopting the paid work of an earlier run with the same settings', { from_run: adopt.runId });
  return { ...config, resumeFrom: adopt };
});
