/**
 * poll_model: reads the model again after a Wait. The slot carries the backoff and the
 * attempts so far; the Choice after this Task routes on the model's next_action.
 *
 * The model is paid for, so a poll that fails on the service's side (unreachable, 5xx, an
 * answer lost, a Retry-After longer than a call waits) is not the end of the run: it is one
 * more wait, for as long as the model's files could still be at the service (its
 * files_expire_at once known, else the files' retention counted from the first failed poll;
 * lambdas/core/schedule/files-deadline.ts).
 * Only past that, or on a final error (a refused key, an answer Hopper cannot use), does the
 * poll fail.
 */
import { defineStep } from '../runtime/index.js';
import { waitForFiles } from '../core/schedule/index.js';
import { keepsCredit, RetryLaterError, ServiceError } from '../service-client/index.js';
import { modelSlot, trainingOrdinal } from '../core/state/index.js';
import type { ModelSlot } from '../core/state/index.js';

export const pollModelStep = defineStep('poll_model', async (state, env) => {
  const { model } = state;
  const client = await env.runtime.service();
  try {
    const record = await client.getModel(model.id);
    // The service gave a failed (or refunded) training's credit back to the account: so does the budget.
    if (!keepsCredit(record.status)) await env.runtime.credits.giveBack(state.run, trainingOrdinal(model));
    return modelSlot(record, model, model, env.runtime.now());
  } catch (error) {
    const waiting = waitThroughFailure(model, error, env.runtime.now());
    if (waiting === undefined) throw error;
    env.runtime.logger.warn('poll failed; waiting for the service', {
      model_id: model.id,
      unreachable_since: waiting.unreachableSince,
      wait_seconds: waiting.waitSeconds,
      reason: error instanceof Error ? error.message : String(error),
    });
    return waiting;
  }
});

/**
 * The slot that waits out a failed poll of `model`, or undefined when the failure is final or the
 * model's files could be gone by now (then the run fails with the poll's error).
 */
export function waitThroughFailure(model: ModelSlot, error: unknown, now: number): ModelSlot | undefined {
  if (!(error instanceof ServiceError) || !(error.retryable || error instanceof RetryLaterError)) {
    return undefined;
  }
  const waiting = waitForFiles({
    now,
    previous: model,
    failingSince: model.unreachableSince,
    filesExpireAt: model.filesExpireAt,
    filesRetentionSeconds: model.filesRetentionSeconds,
    retryAfterMs: error.retryAfterMs,
  });
  if (waiting === undefined) return undefined;
  return { ...model, nextAction: 'wait', unreachableSince: waiting.failingSince, ...waiting.schedule };
}
