/**
 * The run's summary (attempts, credits, invocations and time per step, state transitions, S3
 * requests, estimated AWS cost, the service's gpu_usd and jev_usd) in status/<drop>.json and
 * model.json, end to end through local mode: the counts are checked against what the run's
 * execution events show (each Task state entered is one Lambda invocation) and what the
 * service reports, the cost against the published prices.
 */
import { describe, expect, it } from 'vitest';
import { TASKS } from '../../infra/tasks.js';
import { PRICES_USD } from '../../lambdas/records/status/index.js';
import type { RunSummary } from '../../lambdas/records/status/index.js';
import {
  dropAndRun,
  modelObjects,
  statesEntered,
  useLocalMode,
  type FinishedRun,
} from '../helpers/local-mode.js';
import { expectFailed, expectSucceeded } from '../helpers/local-runs.js';
import { reviewsDrop } from '../helpers/fixtures.js';

const fixture = useLocalMode();

/** The step name a Task state's handler reports (`PickDecisions` -> `pick_decisions`). */
function stepOf(taskName: string): string {
  return taskName.replace(/(?<!^)([A-Z])/g, '_$1').toLowerCase();
}

/** Invocations per step, from the Task states the execution entered. */
function invocationsEntered(run: FinishedRun): Record<string, number> {
  const tasks = new Set<string>(TASKS.map((task) => task.name));
  const counts: Record<string, number> = {};
  for (const state of statesEntered(run.events)) {
    if (tasks.has(state)) counts[stepOf(state)] = (counts[stepOf(state)] ?? 0) + 1;
  }
  return counts;
}

function invocationsIn(summary: RunSummary): Record<string, number> {
  return Object.fromEntries(Object.entries(summary.steps).map(([step, usage]) => [step, usage.invocations]));
}

/** The checks every finished run's summary passes, succeeded or failed. */
function expectConsistent(summary: RunSummary | null | undefined, run: FinishedRun): RunSummary {
  expect(summary).toBeTruthy();
  const sum = summary as RunSummary;
  const entered = invocationsEntered(run);
  expect(invocationsIn(sum)).toEqual(entered);
  expect(sum.lambda_invocations).toBe(Object.values(entered).reduce((a, b) => a + b, 0));
  // Every state the execution entered is one transition; the estimate counts each of them.
  expect(sum.state_transitions).toBe(statesEntered(run.events).length);

  // GB-seconds from each Task's memory (infra/tasks.ts) and the time its invocations took.
  let gbSeconds = 0;
  for (const task of TASKS) {
    const usage = sum.steps[stepOf(task.name)];
    if (usage === undefined) continue;
    expect(usage.gb_seconds).toBeCloseTo(((task.memoryMb / 1024) * usage.ms) / 1000, 5);
    gbSeconds += usage.gb_seconds;
  }
  expect(sum.lambda_gb_seconds).toBeCloseTo(gbSeconds, 5);

  // Each invocation reads the status at its start (a GET) and writes it, conditional on that read
  // (a PUT), at least.
  expect(sum.s3_requests.get).toBeGreaterThanOrEqual(sum.lambda_invocations);
  expect(sum.s3_requests.put).toBeGreaterThanOrEqual(sum.lambda_invocations);

  const stepFunctions = sum.state_transitions * PRICES_USD.stepFunctionsTransition;
  const lambda = gbSeconds * PRICES_USD.lambdaGbSecondArm + sum.lambda_invocations * PRICES_USD.lambdaRequest;
  const s3 = sum.s3_requests.put * PRICES_USD.s3PutRequest + sum.s3_requests.get * PRICES_USD.s3GetRequest;
  expect(sum.aws_usd.step_functions).toBeCloseTo(stepFunctions, 8);
  expect(sum.aws_usd.lambda).toBeCloseTo(lambda, 8);
  expect(sum.aws_usd.s3).toBeCloseTo(s3, 8);
  expect(sum.aws_usd.total).toBeCloseTo(stepFunctions + lambda + s3, 8);
  expect(sum.prices).toEqual({ region: 'us-east-1', as_of: expect.any(String) as unknown });
  return sum;
}

interface ModelJsonWithSummary {
  readonly model: { readonly id: string; readonly gpu_usd: number | null; readonly jev_usd: number | null };
  readonly summary: RunSummary;
}

describe('the run summary', () => {
  it('a run that trains on its second attempt: exact invocations and transitions, both trainings, one credit', async () => {
    const local = await fixture.start({ simulated: { failTrainings: 1 } });
    const run = await dropAndRun(local, 'summed', reviewsDrop());
    expect(run.outcome.status).toBe('SUCCEEDED');
    const modelId = expectSucceeded(run.status, run.execution.name);

    const summary = expectConsistent(run.status?.summary, run);
    expect(summary.steps.start_training?.invocations).toBe(2);
    expect(summary.steps.report?.invocations).toBe(1);
    expect(Object.values(summary.steps).every((step) => step.failed === 0)).toBe(true);
    expect(summary.attempts).toBe(2);
    expect(summary.credits).toBe(1);
    expect(summary.trainings.map((training) => training.status)).toEqual(['failed', 'done']);
    expect(summary.trainings[1]?.model_id).toBe(modelId);

    const record = JSON.parse(
      (await modelObjects(local, 'summed')).get(`${modelId}/model.json`)?.toString() ?? 'null',
    ) as ModelJsonWithSummary;
    // The service's figures, summed over both trainings (a failed one used GPU time too).
    const gpu = summary.trainings.map((training) => training.gpu_usd ?? 0);
    expect(summary.trainings[1]?.gpu_usd).toBe(record.model.gpu_usd);
    expect(summary.gpu_usd).toBeCloseTo(
      gpu.reduce((a, b) => a + b, 0),
      6,
    );
    expect(summary.jev_usd).toBe(record.model.jev_usd);

    // model.json is written by the copy: everything up to it, the report not yet.
    const { report, ...beforeReport } = invocationsIn(summary);
    expect(report).toBe(1);
    expect(invocationsIn(record.summary)).toEqual(beforeReport);
    // The copy counts itself and its ModelCopied choice; after it: Report, RunSucceeded, Succeeded.
    expect(record.summary.state_transitions).toBe(summary.state_transitions - 3);
    expect(record.summary.credits).toBe(1);
    expect(record.summary.gpu_usd).toBe(summary.gpu_usd);
    expect(record.summary.aws_usd.total).toBeGreaterThan(0);
    expect(record.summary.aws_usd.total).toBeLessThan(summary.aws_usd.total);
  });

  it('a run refused for lack of credits carries its summary too: the failed invocation counted, no credit', async () => {
    const local = await fixture.start({ simulated: { credits: 0 } });
    const run = await dropAndRun(local, 'broke', reviewsDrop());
    const status = await expectFailed(local, run, 'no_credits');

    const summary = expectConsistent(status.summary, run);
    expect(summary.steps.start_training).toMatchObject({ invocations: 1, failed: 1 });
    expect(summary).toMatchObject({ attempts: 0, credits: 0, trainings: [], gpu_usd: null, jev_usd: null });
  });

  it('a run whose every training fails: both attempts, no credit held, the stop state counted', async () => {
    const local = await fixture.start({ simulated: { failTrainings: 2 } });
    const run = await dropAndRun(local, 'exhausted', reviewsDrop('{"maxAttempts": 2}'));
    const status = await expectFailed(local, run, 'training_failed');

    const summary = expectConsistent(status.summary, run);
    expect(statesEntered(run.events)).toContain('AttemptsExhausted');
    expect(summary.attempts).toBe(2);
    expect(summary.credits).toBe(0);
    expect(summary.trainings.map((training) => training.status)).toEqual(['failed', 'failed']);
  });
});
