/**
 * validate_drop: reads the drop folder and the train.json that started the run, checks them and
 * returns the run's configuration ($.config) with every default applied and every file pinned
 * by size and etag, once the folder has stopped changing. The rules are in lambdas/drop/.
 *
 * It puts the run's Started event (lambdas/runtime/publish-events.ts); its status is written
 * once, by the invocation, when it ends (one write per step). A run with the same settings as an
 * earlier run of the drop that holds a paid model, was about to start its training, or has a
 * dataset past its uploads, goes on from that run's dataset and adopts any model there
 * (lambdas/ownership/adoption.ts): no second credit, no second dataset. Both read the drop's
 * status as the invocation found it.
 */
import { validateDrop } from '../drop/validate.js';
import { announceRun, defineStep } from '../runtime/index.js';
import { resumeTarget, workToAdopt } from '../ownership/index.js';
import { configFingerprint } from '../core/state/index.js';

export const validateDropStep = defineStep('validate_drop', async (state, env) => {
  const { s3, logger } = env.runtime;
  const { run } = state;
  // First, so a drop that fails validation still has its Started event before its Failed one.
  await announceRun(state, env);
  const previous = env.found?.status ?? null;
  const clock = { now: () => env.runtime.now(), remainingMs: () => env.remainingMs() };
  const settle = { quietMs: env.runtime.dropQuietMs, clock };
  const { config, trainJson, leftOut } = await validateDrop(s3, run, settle);
  if (leftOut.length > 0)
    logger.info('left out: files operating systems leave in folders', { files: leftOut });
  // `"resume": true` names the run to resume; otherwise the same settings adopt paid work.
  if (trainJson.resume === true)
    return { ...config, resumeFrom: resumeTarget(previous, run.drop, run.runId) };
  const adopt = workToAdopt(previous, run.runId, configFingerprint(config));
  if (adopt === undefined) return config;
  const work = adopt.datasetOnly === true ? 'dataset' : 'paid work';
  logger.info(`adopting the ${work} of an earlier run with the same settings`, { from_run: adopt.runId });
  return { ...config, resumeFrom: adopt };
});
