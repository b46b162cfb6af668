/**
 * Fixtures for the pipeline's step tests: the local S3 server and simulated services over real
 * HTTP on loopback, a runtime bound to them (as local mode builds it), drops put into the bucket,
 * and the state a run would carry into a step.
 */
import { randomUUID } from 'node:crypto';
import { GetObjectCommand, HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { Logger } from '@aws-lambda-powertools/logger';
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { RunEventBus } from '../../lambdas/records/events/index.js';
import { LocalEventBus } from '../../local/emulator/event-bus.js';
import { startLocalS3, type LocalS3 } from '../../local/s3/local-s3.js';
import {
  DEFAULT_OPTIONS,
  startSimulatedService,
  type SimulatedService,
  type SimulatedServiceOptions,
} from '../../local/service/index.js';
import {
  createRuntime,
  type Runtime,
  trainingService,
  type TrainingServiceOptions,
} from '../../lambdas/runtime/index.js';
import type { InvocationContext, StepEnv } from '../../lambdas/runtime/index.js';
import type { CreditBudget } from '../../lambdas/ownership/index.js';
import { configOf, stateOf, uniqueDrop } from './fixtures.js';
import { datasetSlot, type RunConfig, type RunState } from '../../lambdas/core/state/index.js';
import type { Dataset } from '../../lambdas/service-client/index.js';
import { inboxKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { QUICK } from '../client/helpers.js';

export { QUICK };

export interface PipelineFixtures {
  /** The local S3 server, shared by the tests of a file (each test uses its own drop name). */
  s3(): LocalS3;
  /** A fresh simulated service (QUICK unless overridden), closed after the test. */
  service(partial?: Partial<SimulatedServiceOptions>): Promise<SimulatedService>;
  /**
   * A runtime on the local S3 server and `service`, with fast client retries and no log output;
   * its run events go to `events` (default: a LocalEventBus of its own, `runtime.events`).
   */
  runtime(
    service: SimulatedService,
    overrides?: {
      apiKey?: string;
      now?: () => number;
      events?: RunEventBus;
      clientOptions?: TrainingServiceOptions['clientOptions'];
      creditBudget?: CreditBudget;
    },
  ): Runtime;
  /**
   * The state of a run of a fresh drop in the local bucket, with `config` and its dataset slot
   * made from `dataset` as `service` answered it now.
   */
  withDataset(service: SimulatedService, dataset: Dataset, config?: RunConfig): RunState;
  /** A runtime on the local S3 server alone, for the steps that call no service (validate_drop). */
  s3Runtime(): Runtime;
  /** Puts `files` into inbox/<drop>/ (train.json last); the state the drop's run starts with. */
  dropped(files: Readonly<Record<string, string | Buffer>>, drop?: string): Promise<RunState>;
}

export function usePipelineFixtures(): PipelineFixtures {
  let localS3: LocalS3 | undefined;
  const services: SimulatedService[] = [];
  const runtimes: Runtime[] = [];
  beforeAll(async () => {
    localS3 = await startLocalS3();
  });
  afterAll(async () => {
    await localS3?.close();
  });
  afterEach(async () => {
    await Promise.all(runtimes.splice(0).map(async (runtime) => (await runtime.service()).close()));
    await Promise.all(services.splice(0).map((service) => service.close()));
  });
  const s3 = (): LocalS3 => {
    if (localS3 === undefined) throw new Error('the local S3 server is not running yet');
    return localS3;
  };
  return {
    s3,
    async service(partial = {}) {
      const service = await startSimulatedService({ ...DEFAULT_OPTIONS, ...QUICK, ...partial });
      services.push(service);
      return service;
    },
    runtime(service, overrides = {}) {
      const runtime = createRuntime({
        s3: s3().client,
        service: trainingService({
          serviceUrl: service.apiUrl,
          apiKey: () => Promise.resolve(overrides.apiKey ?? service.apiKey),
          clientOptions: overrides.clientOptions ?? {
            timeoutMs: 5_000,
            backoffBaseMs: 1,
            backoffCapMs: 5,
            maxRetryAfterMs: 10,
          },
        }),
        logger: new Logger({ logLevel: 'SILENT' }),
        now: overrides.now ?? (() => service.clock.now()),
        dropQuietMs: 0,
        events: overrides.events ?? new LocalEventBus(),
        creditBudget: overrides.creditBudget,
      });
      runtimes.push(runtime);
      return runtime;
    },
    withDataset(service, dataset, config = configOf()) {
      return stateOf(s3().bucket, { config, dataset: datasetSlot(dataset, undefined, service.clock.now()) });
    },
    s3Runtime() {
      return createRuntime({ s3: s3().client, logger: new Logger({ logLevel: 'SILENT' }), dropQuietMs: 0 });
    },
    async dropped(files, drop = uniqueDrop()) {
      const { client, bucket } = s3();
      await putDrop(client, bucket, drop, files);
      return runStateFor(client, bucket, drop);
    },
  };
}

/** Puts the files of a drop into inbox/<drop>/, train.json last when given. */
export async function putDrop(
  s3: S3Client,
  bucket: string,
  drop: string,
  files: Readonly<Record<string, string | Buffer>>,
): Promise<void> {
  const names = Object.keys(files).sort((a, b) => Number(a === TRAIN_JSON) - Number(b === TRAIN_JSON));
  for (const name of names) {
    // As bytes: an empty string goes without a Content-Length, and the SDK warns of a stream.
    const body = Buffer.from(files[name] ?? '');
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: inboxKey(drop, name), Body: body }));
  }
}

/** The state a run of `drop` starts with, as the trigger builds it from train.json's event. */
export async function runStateFor(s3: S3Client, bucket: string, drop: string): Promise<RunState> {
  const key = inboxKey(drop, TRAIN_JSON);
  const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
  return {
    run: {
      runId: `${drop}-run`,
      bucket,
      drop,
      key,
      etag: (head.ETag ?? '').replaceAll('"', ''),
      startedAt: new Date().toISOString(),
    },
  };
}

/** A Lambda-like invocation context with `remainingMs` left (default: a full 15 minutes). */
export function invocationContext(remainingMs = 15 * 60_000): InvocationContext {
  const deadline = Date.now() + remainingMs;
  return { getRemainingTimeInMillis: () => deadline - Date.now(), awsRequestId: randomUUID() };
}

/** The environment a step's domain function gets, over `runtime`. */
export function stepEnv(runtime: Runtime, remainingMs = 15 * 60_000): StepEnv {
  const context = invocationContext(remainingMs);
  return { runtime, remainingMs: () => context.getRemainingTimeInMillis(), requestId: context.awsRequestId };
}

/** An object's text, or null when it does not exist. */
export async function readText(s3: S3Client, bucket: string, key: string): Promise<string | null> {
  try {
    const answer = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    return (await answer.Body?.transformToString()) ?? '';
  } catch (error) {
    if (error instanceof Error && error.name === 'NoSuchKey') return null;
    throw error;
  }
}
