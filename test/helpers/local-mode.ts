/**
 * Local mode for end-to-end tests: startLocalMode with Wait states and retry pauses cut short,
 * closed after each test, and drops that run to their end within a bounded time.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterEach } from 'vitest';
import { readStatus, type RunStatus } from '../../lambdas/records/status/index.js';
import { inboxKey, MODELS_PREFIX, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import type { TaskName } from '../../infra/tasks.js';
import {
  startLocalMode,
  type LocalMode,
  type LocalModeOptions,
  type LocalTask,
} from '../../local/emulator/local-mode.js';
import type { Execution, ExecutionEvent, ExecutionOutcome } from '../../local/emulator/state-machine.js';
import type { SimulatedService } from '../../local/service/index.js';
import { putDrop } from './pipeline.js';
import { BRISK_SERVICE } from '../../testkit/brisk-service.js';
import { gate, withTimeout } from '../../testkit/timeout.js';

/** How long a test waits for a run to end before it fails (runs take well under a second). */
export const RUN_TIMEOUT_MS = 20_000;

export interface LocalModeFixture {
  /**
   * Local mode with BRISK_SERVICE, 10 ms waits, no retry pauses and drops taken at once unless
   * `options` say otherwise.
   */
  start(options?: LocalModeOptions): Promise<LocalMode>;
}

/**
 * Local mode with BRISK_SERVICE, 10 ms waits, no retry pauses and drops taken at once unless
 * `options` say otherwise; the caller closes it.
 */
export function startBriskLocalMode(options: LocalModeOptions = {}): Promise<LocalMode> {
  return startLocalMode({
    waitMs: 10,
    retryPauseMs: 0,
    // The tests put train.json last; settling is tested on its own.
    dropQuietMs: 0,
    ...options,
    simulated: { ...BRISK_SERVICE, ...options.simulated },
  });
}

/** For tests that stop local mode and start it again on the same data directory. */
export interface KeptLocalModeFixture {
  /** A fresh data directory, removed after the test. */
  dataDir(): Promise<string>;
  /** Local mode kept in `dataDir`, as startBriskLocalMode starts it; closed after the test unless the test did. */
  start(dataDir: string, options?: LocalModeOptions): Promise<LocalMode>;
  /** Runs `cleanup` after the test, before what was registered earlier. */
  defer(cleanup: () => Promise<void>): void;
}

export function useKeptLocalMode(): KeptLocalModeFixture {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  return {
    async dataDir() {
      const dataDir = await mkdtemp(join(tmpdir(), 'hopper-data-'));
      cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
      return dataDir;
    },
    async start(dataDir, options = {}) {
      const local = await startBriskLocalMode({ ...options, dataDir });
      let closed = false;
      cleanups.push(async () => {
        if (!closed) await local.close();
      });
      return {
        ...local,
        async close() {
          closed = true;
          await local.close();
        },
      };
    },
    defer(cleanup) {
      cleanups.push(cleanup);
    },
  };
}

export function useLocalMode(): LocalModeFixture {
  const started: LocalMode[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((local) => local.close()));
  });
  return {
    async start(options = {}) {
      const local = await startBriskLocalMode(options);
      started.push(local);
      return local;
    },
  };
}

export interface FinishedRun {
  readonly execution: Execution;
  readonly outcome: ExecutionOutcome;
  /** status/<drop>.json at the end. */
  readonly status: RunStatus | null;
  /** Every event of the execution. */
  readonly events: readonly ExecutionEvent[];
}

/**
 * Puts `files` into inbox/<drop>/ (train.json last), as a user's S3 client would; the S3 event
 * starts the run through the trigger. Resolves when that run has ended.
 */
export async function dropAndRun(
  local: LocalMode,
  drop: string,
  files: Readonly<Record<string, string | Buffer>>,
  timeoutMs = RUN_TIMEOUT_MS,
): Promise<FinishedRun> {
  const upload = gate();
  const started = nextExecution(local, inboxKey(drop, TRAIN_JSON), timeoutMs, upload.opened);
  await putDrop(local.s3.client, local.bucket, drop, files);
  upload.open();
  return finished(local, await started.execution, started.events, timeoutMs);
}

/**
 * The next execution started for `key`, and its events from the first. The wait's deadline runs
 * from `after` (by default now): given the upload of train.json, it bounds the trigger's work,
 * not the upload's, however long a loaded machine takes to send a large drop.
 */
export function nextExecution(
  local: LocalMode,
  key: string,
  timeoutMs = RUN_TIMEOUT_MS,
  after: Promise<unknown> = Promise.resolve(),
): { execution: Promise<Execution>; events: ExecutionEvent[] } {
  const events: ExecutionEvent[] = [];
  const started = local.stateMachine.nextStarted((run) => run.input.run.key === key, {
    onEvent: (event) => events.push(event),
  });
  // Handled here too, so a failure before `after` is no unhandled rejection; the wait still gets it.
  started.catch(() => undefined);
  const execution = after.then(() => withTimeout(started, `no run started for ${key}`, timeoutMs));
  return { execution, events };
}

/** The run's outcome and status once `execution` has ended. */
export async function finished(
  local: LocalMode,
  execution: Execution,
  events: readonly ExecutionEvent[] = [],
  timeoutMs = RUN_TIMEOUT_MS,
): Promise<FinishedRun> {
  const outcome = await withTimeout(execution.done, `run ${execution.name} did not end`, timeoutMs);
  const status = await readStatus(local.s3.client, local.bucket, execution.input.run.drop);
  return { execution, outcome, status, events };
}

/** The simulated service local mode started (fails the test if it started none). */
export function simulatedOf(local: LocalMode): SimulatedService {
  if (local.simulated === undefined) throw new Error('local mode started no simulated service');
  return local.simulated;
}

/** The simulated service's answer to GET `path` of its API (with its key), as JSON. */
export async function serviceGet<T>(service: SimulatedService, path: string): Promise<T> {
  const answer = await fetch(`${service.apiUrl}${path}`, {
    headers: { authorization: `Bearer ${service.apiKey}` },
  });
  return (await answer.json()) as T;
}

/** The simulated service's models or datasets, newest first (its first page of 100). */
export async function serviceList<T>(service: SimulatedService, what: 'models' | 'datasets'): Promise<T[]> {
  return (await serviceGet<{ data: T[] }>(service, `/v1/${what}?limit=100`)).data;
}

/** A LocalModeOptions.wrapTask wrapping Task `task` with `wrap`, the other Tasks as they are. */
export function wrapOnly(
  task: TaskName,
  wrap: (lambda: LocalTask) => LocalTask,
): NonNullable<LocalModeOptions['wrapTask']> {
  return (name, lambda) => (name === task ? wrap(lambda) : lambda);
}

/** Resolves once run `runId` enters state `state` (bounded). */
export function stateReached(
  local: LocalMode,
  runId: string,
  state: string,
  timeoutMs = RUN_TIMEOUT_MS,
): Promise<void> {
  const reached = new Promise<void>((resolve) => {
    const onEvent = (execution: { name: string }, event: ExecutionEvent): void => {
      if (execution.name === runId && event.type === 'StateEntered' && event.state.name === state) {
        local.stateMachine.off('event', onEvent);
        resolve();
      }
    };
    local.stateMachine.on('event', onEvent);
  });
  return withTimeout(reached, `run ${runId} did not reach ${state}`, timeoutMs);
}

/** The names of the states an execution entered, in order: the route the run took. */
export function statesEntered(events: readonly ExecutionEvent[]): string[] {
  return events.flatMap((event) => (event.type === 'StateEntered' ? [event.state.name] : []));
}

/**
 * Every object of the drop's models, models/<drop>/<model id>/..., by key relative to
 * models/<drop>/ (`<model id>/model.onnx`); not the drop's current.json beside them.
 */
export async function modelObjects(local: LocalMode, drop: string): Promise<Map<string, Buffer>> {
  const prefix = `${MODELS_PREFIX}${drop}/`;
  const { client, bucket } = local.s3;
  const listed = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }));
  const objects = new Map<string, Buffer>();
  for (const { Key: key } of listed.Contents ?? []) {
    if (key === undefined || !key.slice(prefix.length).includes('/')) continue;
    const object = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    objects.set(key.slice(prefix.length), Buffer.from((await object.Body?.transformToByteArray()) ?? []));
  }
  return objects;
}

/**
 * Waits into the next whole second. S3 events give their time to the second, and a run of the same
 * train.json that ended within the second of an upload counts as overlapping it (and is adopted):
 * a test that asks for a retrain after a success uploads in a later second, as a person would.
 */
export async function nextSecond(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000) + 10));
}
