/**
 * One trial of the crash explorer: a drop run in local mode with something done to it at one
 * point of its first run (the process killed there, train.json uploaded again there, or that
 * request's answer garbled), then the advice Hopper gives followed as a user would, then the
 * invariants checked (invariants.ts). Local mode runs in this process, on a data directory of
 * its own, with the simulated service; a kill is SideEffectWatch's whole-process death followed
 * by a start on the same data directory.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { ENDPOINTS as API_ENDPOINTS } from '../../../lambdas/service-client/contract.js';
import { readStatus } from '../../../lambdas/records/status/index.js';
import { inboxKey, TRAIN_JSON } from '../../../lambdas/storage/keys.js';
import { runRetryCommand } from '../../../local/cli/retry.js';
import { startLocalMode, type LocalMode } from '../../../local/emulator/local-mode.js';
import type { Execution } from '../../../local/emulator/state-machine.js';
import type { EndpointName, SimulatedService } from '../../../local/service/index.js';
import { BRISK_SERVICE } from '../../../testkit/brisk-service.js';
import { withTimeout } from '../../../testkit/timeout.js';
import { runCommandCaptured, settingsOf } from '../../helpers/commands.js';
import { endpointOf } from '../../helpers/handler-kills.js';
import { putDrop } from '../../helpers/pipeline.js';
import {
  endInvariants,
  finalStatusTrue,
  orphans,
  restartInvariants,
  worldOf,
  type CreditsAllowed,
} from './invariants.js';
import { followAdvice, type AdviceDriver } from './advice.js';
import { pointOf, SideEffectWatch, type Effect, type WatchHooks } from './watch.js';

/** The drop every trial runs. */
export interface Drop {
  readonly name: string;
  readonly files: Readonly<Record<string, string>>;
  /** Another train.json: a changed redrop. */
  readonly changedTrainJson: string;
}

/**
 * What is done at the point: the process killed once the request had its effect, its answer
 * lost (`kill`), or as it was about to send it (`kill-before`); train.json uploaded again, the
 * same or changed, before the request is sent; the request's answer garbled; `kill-9`: a real
 * kill -9 of a `hopper local` process as the answer comes back (process-kill.ts).
 */
export type TrialKind = 'kill' | 'kill-before' | 'kill-9' | 'redrop-same' | 'redrop-changed' | 'garble';

export interface Trial {
  readonly kind: TrialKind;
  /** pointOf() of an effect of the drop's first run. */
  readonly point: string;
}

export interface TrialResult {
  readonly trial: Trial;
  /** False when the run never came to the point (it took another path this time). */
  readonly reached: boolean;
  /** One line per invariant broken. */
  readonly violations: readonly string[];
  readonly seconds: number;
}

const CREDITS = 10;
/** How long a run may take before it counts as stuck (a run here takes 1 to 3 s). */
const RUN_BOUND_MS = 30_000;

function startMode(dataDir: string | undefined, hooks?: SideEffectWatch): Promise<LocalMode> {
  return startLocalMode({
    waitMs: 10,
    retryPauseMs: 0,
    dropQuietMs: 0,
    ...(dataDir === undefined ? {} : { dataDir }),
    simulated: { ...BRISK_SERVICE, credits: CREDITS },
    ...(hooks?.modeOptions() ?? {}),
  });
}

function simulatedOf(local: LocalMode): SimulatedService {
  if (local.simulated === undefined) throw new Error('local mode started no simulated service');
  return local.simulated;
}

/** A clean run of `drop`: every effect of its first run, in order. */
export async function recordCleanRun(drop: Drop): Promise<Effect[]> {
  const watch = new SideEffectWatch();
  const local = await startMode(undefined, watch);
  try {
    watch.watchFunctions(local);
    await putDrop(local.s3.client, local.bucket, drop.name, drop.files);
    await allEnded(local, 1);
    const world = await worldOf(simulatedOf(local), local.s3, drop.name, CREDITS);
    const problems = [...(await finalStatusTrue(world, local.s3, drop.name)), ...orphans(world)];
    if (problems.length > 0) throw new Error(`the clean run does not hold: ${problems.join('; ')}`);
    return watch.effects.filter((effect) => effect.run === 1);
  } finally {
    await local.close();
    await watch.close();
  }
}

export async function runTrial(drop: Drop, trial: Trial): Promise<TrialResult> {
  const started = performance.now();
  const dataDir = await mkdtemp(join(tmpdir(), 'hopper-crash-'));
  try {
    const killed = trial.kind === 'kill' || trial.kind === 'kill-before';
    const outcome = killed ? await killTrial(drop, trial, dataDir) : await liveTrial(drop, trial);
    return { trial, ...outcome, seconds: (performance.now() - started) / 1000 };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return {
      trial,
      reached: true,
      violations: [`harness: ${message.slice(0, 300)}`],
      seconds: (performance.now() - started) / 1000,
    };
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

type Outcome = Pick<TrialResult, 'reached' | 'violations'>;

const atPoint = (trial: Trial) => (effect: Effect) => effect.run === 1 && pointOf(effect) === trial.point;

/** Killed at the point; started again on the same data directory; the advice followed. */
async function killTrial(drop: Drop, trial: Trial, dataDir: string): Promise<Outcome> {
  const watch = new SideEffectWatch(
    trial.kind === 'kill' ? { killAfter: atPoint(trial) } : { killBefore: atPoint(trial) },
  );
  const first = await startMode(dataDir, watch);
  let startedRuns = 0;
  first.stateMachine.on('started', () => (startedRuns += 1));
  let reached: boolean;
  try {
    watch.watchFunctions(first);
    await putDrop(first.s3.client, first.bucket, drop.name, drop.files);
    reached = await Promise.race([watch.died.then(() => true), allEnded(first, 1).then(() => false)]);
  } finally {
    await first.close();
    await watch.close();
  }
  if (!reached) return { reached, violations: [] };
  const second = await startMode(dataDir);
  try {
    const atRestart = await worldOf(simulatedOf(second), second.s3, drop.name, CREDITS);
    const violations = restartInvariants(atRestart, drop.name, startedRuns > 0);
    violations.push(...(await followAdvice(inProcess(second, drop), drop, atRestart.status)));
    violations.push(...(await endedAs(second, drop, { allowed: 1, why: 'one train.json' })));
    return { reached, violations };
  } finally {
    await second.close();
  }
}

/** A redrop or a garbled answer at the point; the run (or runs) to their end; the advice followed. */
async function liveTrial(drop: Drop, trial: Trial): Promise<Outcome> {
  let redroppedAt: number | undefined;
  // The hooks are made before local mode starts, and act only once it runs.
  const started: { local?: LocalMode } = {};
  const hooks: WatchHooks = {
    async before(effect) {
      const { local } = started;
      if (!atPoint(trial)(effect) || local === undefined || redroppedAt !== undefined) return;
      redroppedAt = effect.seq;
      if (trial.kind === 'garble') {
        simulatedOf(local).configure({
          faults: [{ endpoint: endpointNameOf(effect.request), kind: 'garble', count: 1 }],
        });
        return;
      }
      const next = nextRun(local, drop);
      const trainJson = trial.kind === 'redrop-same' ? (drop.files[TRAIN_JSON] ?? '') : drop.changedTrainJson;
      await local.s3.client.send(
        new PutObjectCommand({ Bucket: local.bucket, Key: inboxKey(drop.name, TRAIN_JSON), Body: trainJson }),
      );
      await next;
    },
  };
  const watch = new SideEffectWatch(hooks);
  const local = await startMode(undefined, watch);
  started.local = local;
  try {
    watch.watchFunctions(local);
    await putDrop(local.s3.client, local.bucket, drop.name, drop.files);
    await allEnded(local, 1);
    if (redroppedAt === undefined) return { reached: false, violations: [] };
    const violations: string[] = [];
    const ended = await worldOf(simulatedOf(local), local.s3, drop.name, CREDITS);
    violations.push(...(await followAdvice(inProcess(local, drop), drop, ended.status)));
    violations.push(...(await endedAs(local, drop, creditsAllowed(trial, watch, redroppedAt))));
    return { reached: true, violations };
  } finally {
    await local.close();
    await watch.close();
  }
}

/**
 * At most 1 credit per distinct train.json, and none for a train.json superseded before its run
 * began to start a training (its StartTraining invocation).
 */
function creditsAllowed(trial: Trial, watch: SideEffectWatch, redroppedAt: number): CreditsAllowed {
  if (trial.kind !== 'redrop-changed') return { allowed: 1, why: 'one train.json' };
  const olderTrained = watch.invocationStarts.some(
    (start) => start.run === 1 && start.task === 'StartTraining' && start.atEffect <= redroppedAt,
  );
  return olderTrained
    ? { allowed: 2, why: 'two train.json, the older one training before the newer came' }
    : { allowed: 1, why: 'two train.json, the older superseded before it started training' };
}

/** endInvariants of the drop as `local` ends it. */
async function endedAs(local: LocalMode, drop: Drop, credits: CreditsAllowed): Promise<string[]> {
  const world = await worldOf(simulatedOf(local), local.s3, drop.name, CREDITS);
  return endInvariants(world, local.s3, drop.name, credits);
}

/** The advice followed in this process's local mode. */
function inProcess(local: LocalMode, drop: Drop): AdviceDriver {
  return {
    async retry() {
      const retry = await runCommandCaptured(runRetryCommand, [drop.name], settingsOf(local));
      return { code: retry.code, output: retry.stderr || retry.stdout };
    },
    upload: (files) => putDrop(local.s3.client, local.bucket, drop.name, files),
    async runStartedBy(act) {
      const next = nextRun(local, drop);
      next.catch(() => undefined);
      await act();
      if (
        !(await next.then(
          () => true,
          () => false,
        ))
      )
        return 'no run';
      return allEnded(local).then(
        () => undefined,
        (error: unknown) => (error instanceof Error ? error.message : String(error)),
      );
    },
    status: () => readStatus(local.s3.client, local.bucket, drop.name),
  };
}

/** The next run of the drop to start (bounded). */
function nextRun(local: LocalMode, drop: Drop): Promise<Execution> {
  const key = inboxKey(drop.name, TRAIN_JSON);
  return withTimeout(
    local.stateMachine.nextStarted((execution) => execution.input.run.key === key),
    'no run started',
    10_000,
  );
}

/**
 * Resolves once at least `atLeast` executions have started, every one has ended and none started
 * for a moment; rejects past the bound.
 */
async function allEnded(local: LocalMode, atLeast = 0): Promise<void> {
  const deadline = Date.now() + RUN_BOUND_MS;
  for (;;) {
    const open = local.stateMachine.executions();
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`did not end within ${String(RUN_BOUND_MS / 1000)} s`);
    if (open.length < atLeast) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      continue;
    }
    const ended = await withTimeout(Promise.all(open.map((execution) => execution.done)), 'late', left).then(
      () => true,
      () => false,
    );
    if (!ended) throw new Error(`did not end within ${String(RUN_BOUND_MS / 1000)} s`);
    // A run may start from an S3 event still on its way: look again after a moment.
    await new Promise((resolve) => setTimeout(resolve, 150));
    if (local.stateMachine.executions().every((execution) => open.includes(execution))) return;
  }
}

/** The simulated service's name of the endpoint of `request` (`GET /v1/datasets/{id}` -> getDataset). */
function endpointNameOf(request: string): EndpointName {
  for (const [name, endpoint] of Object.entries(API_ENDPOINTS)) {
    if (`${endpoint.method} ${endpointOf(endpoint.template)}` === request) return name as EndpointName;
  }
  throw new Error(`no API endpoint for ${request}`);
}
