/**
 * poll_model: reads the model again after a Wait. The slot carries the backoff and the
 * attempts so far; the Choice after this Task routes on the model's next_action.
 *
 * The model is paid for, so a poll that fails on the service's side (unreachable, 5xx, an
 * answer lost, a Retry-After longer than a call waits) is not the end of the run: it is one
 * more wait, for as long as the model's files could still be at the service (its
 * files_expire_at once known, else the files' retention counted from the first failed poll).
 * Only past that, or on a final error (a refused key, an answer Hopper cannot use), does the
 * poll fail.
 */
import { defineStep } from '../run/handler.js';
import { nextPoll, pollCeilingSeconds } from '../run/polling.js';
import { ASSUMED_FILES_RETENTION_MS, RetryLaterError, ServiceError } from '../service-client/index.js';
import { modelSlot } from '../run/slots.js';
import type { ModelSlot } from '../run/state.js';

export const pollModelStep = defineStep('poll_model', async ({ model }, env) => {
  const client = await env.runtime.service();
  try {
    const record = await client.getModel(model.id);
    return modelSlot(record, model.attempts, model, env.runtime.now());
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
  const since = model.unreachableSince ?? new Date(now).toISOString();
  const retentionMs =
    model.filesRetentionSeconds === null ? ASSUMED_FILES_RETENTION_MS : model.filesRetentionSeconds * 1000;
  const deadline = model.filesExpireAt ?? new Date(Date.parse(since) + retentionMs).toISOString();
  const secondsLeft = Math.floor((Date.parse(deadline) - now) / 1000);
  if (!(secondsLeft > 0)) return undefined;
  const schedule = nextPoll('wait', model, {
    now,
    deadline,
    maxSeconds: pollCeilingSeconds(model.filesRetentionSeconds),
  });
  // A Retry-After is honoured, as far as the deadline allows.
  const asked = Math.min(secondsLeft, Math.ceil((error.retryAfterMs ?? 0) / 1000));
  const extra = Math.max(0, asked - schedule.waitSeconds);
  return {
    ...model,
    nextAction: 'wait',
    unreachableSince: since,
    ...schedule,
    waitSeconds: schedule.waitSeconds + extra,
    totalWaitSeconds: schedule.totalWaitSeconds + extra,
  };
}
