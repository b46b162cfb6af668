/**
 * The parts of the run summary a local run does not show on its own: how S3 commands are priced,
 * and how a training seen again replaces what was known of it (test/local/usage.test.ts has the
 * whole runs).
 */
import { describe, expect, it } from 'vitest';
import type { ModelSlot, RunState } from '../../lambdas/core/state/index.js';
import { priceClassOf } from '../../lambdas/runtime/index.js';
import { addInvocation } from '../../lambdas/records/status/index.js';
import { modelSlotOf, stateOf } from '../helpers/fixtures.js';

describe('S3 request price classes', () => {
  it.each([
    ['PutObjectCommand', 'put'],
    ['CopyObjectCommand', 'put'],
    ['CreateMultipartUploadCommand', 'put'],
    ['UploadPartCommand', 'put'],
    ['CompleteMultipartUploadCommand', 'put'],
    ['ListObjectsV2Command', 'put'],
    ['GetObjectCommand', 'get'],
    ['HeadObjectCommand', 'get'],
    ['DeleteObjectCommand', 'free'],
    ['AbortMultipartUploadCommand', 'free'],
  ])('%s is a %s request', (command, kind) => {
    expect(priceClassOf(command)).toBe(kind);
  });
});

function stateWithModel(model: Partial<ModelSlot>): RunState {
  return stateOf('b', { model: modelSlotOf({ status: 'training', ...model }) });
}

describe('the summary of trainings and cost', () => {
  const poll = { step: 'poll_model', ok: true, ms: 1000, memoryMb: 256, s3: { put: 1, get: 2 } } as const;

  it('a training seen again replaces what was known of it; a new one is added; a failed or refunded one holds no credit', () => {
    const queued = addInvocation(null, poll, stateWithModel({ status: 'queued' }));
    expect(queued.trainings).toEqual([{ model_id: 'm1', status: 'queued', gpu_usd: null, jev_usd: null }]);
    expect(queued.credits).toBe(1);
    expect(queued.gpu_usd).toBeNull();

    const failed = addInvocation(
      queued,
      poll,
      stateWithModel({ status: 'failed', nextAction: 'retry', gpuUsd: 0.2 }),
    );
    expect(failed.trainings).toHaveLength(1);
    expect(failed.credits).toBe(0);
    // A poll that finds the model at retry goes through AttemptsLeft: one more transition.
    expect(failed.state_transitions - queued.state_transitions).toBe(4);

    const second = addInvocation(
      failed,
      { ...poll, step: 'start_training' },
      stateWithModel({ id: 'm2', status: 'done', attempts: 2, gpuUsd: 0.3, jevUsd: 0.03 }),
    );
    expect(second.trainings.map((training) => training.model_id)).toEqual(['m1', 'm2']);
    expect(second).toMatchObject({ attempts: 2, credits: 1, gpu_usd: 0.5, jev_usd: 0.03 });

    // Refunded: the service gave the credit back with the model's files.
    const refunded = addInvocation(
      second,
      poll,
      stateWithModel({ id: 'm2', status: 'refunded', attempts: 2 }),
    );
    expect(refunded.credits).toBe(0);
  });

  it('adds up invocations, time, GB-seconds and requests per step, and prices them', () => {
    const once = addInvocation(null, poll, stateWithModel({}));
    const twice = addInvocation(once, { ...poll, ok: false, ms: 500 }, stateWithModel({}));
    expect(twice.steps.poll_model).toEqual({ invocations: 2, failed: 1, ms: 1500, gb_seconds: 0.375 });
    expect(twice.lambda_invocations).toBe(2);
    expect(twice.s3_requests).toEqual({ put: 2, get: 4 });
    // 3 transitions for the poll (Wait, Task, Choice), 1 for the failed invocation.
    expect(twice.state_transitions).toBe(4);
    expect(twice.aws_usd.step_functions).toBeCloseTo(4 * 0.000025, 10);
    expect(twice.aws_usd.lambda).toBeCloseTo(0.375 * 0.0000133334 + 2 * 0.0000002, 10);
    expect(twice.aws_usd.s3).toBeCloseTo(2 * 0.000005 + 4 * 0.0000004, 10);
  });
});
