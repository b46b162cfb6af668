/**
 * What a step needs from its surroundings: S3, the training service and a logger. In Lambda it
 * comes from the environment the stack sets (ENV below); local mode builds its own (an S3 client
 * on the local server, the simulated service, a key given on the command line) and binds the
 * same handlers to it with `handler.withRuntime(runtime)`.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { S3Client } from '@aws-sdk/client-s3';
import { DROP_QUIET_MS } from '../drop/settle.js';
import { TrainingServiceClient } from '../service-client/index.js';
import { RunError } from './errors.js';
import type { RunEventBus } from './event-bus.js';
import { DEFAULT_EVENT_SOURCE } from './events.js';

/** The environment variables a Lambda handler reads (set by infra/, one place for the names). */
export const ENV = {
  serviceUrl: 'HOPPER_SERVICE_URL',
  apiKeySecret: 'HOPPER_API_KEY_SECRET_ARN',
  stateMachineArn: 'HOPPER_STATE_MACHINE_ARN',
  /** The `source` of Hopper's run events (default DEFAULT_EVENT_SOURCE). */
  eventSource: 'HOPPER_EVENT_SOURCE',
} as const;

/** Seconds the API key is cached per container before Secrets Manager is asked again. */
export const API_KEY_CACHE_SECONDS = 300;

export interface Runtime {
  readonly s3: S3Client;
  /** A client with the current API key; the same instance while the key does not change. */
  service(): Promise<TrainingServiceClient>;
  readonly logger: Logger;
  /** Milliseconds since the epoch; injected so tests can stand at a chosen time. */
  now(): number;
  /** How long a drop folder must be unchanged before validate_drop takes it (0: at once). */
  readonly dropQuietMs: number;
  /** Where the run's Started, Succeeded and Failed events go (lambdas/run/event-bus.ts). */
  readonly events: RunEventBus;
}

/** Where the API key comes from; never logged, never part of a state. */
export type ApiKeySource = () => Promise<string>;

export interface RuntimeOptions {
  readonly s3: S3Client;
  readonly serviceUrl: string;
  readonly apiKey: ApiKeySource;
  readonly logger?: Logger;
  readonly now?: () => number;
  /** Default DROP_QUIET_MS; 0 where the caller uploads train.json last itself (hopper run). */
  readonly dropQuietMs?: number;
  /** Where run events go. Default: a bus that refuses every event (the steps then fail). */
  readonly events?: RunEventBus;
  /** Passed to every TrainingServiceClient (timeouts, retries); not the base URL or key. */
  readonly clientOptions?: Partial<
    Omit<ConstructorParameters<typeof TrainingServiceClient>[0], 'baseUrl' | 'apiKey'>
  >;
}

export function createRuntime(options: RuntimeOptions): Runtime {
  const logger = options.logger ?? new Logger({ serviceName: 'hopper' });
  let current: { key: string; client: TrainingServiceClient } | undefined;
  return {
    s3: options.s3,
    logger,
    now: options.now ?? Date.now,
    dropQuietMs: options.dropQuietMs ?? DROP_QUIET_MS,
    events: options.events ?? NO_EVENT_BUS,
    async service() {
      const key = await options.apiKey();
      if (current?.key !== key) {
        const previous = current?.client;
        current = {
          key,
          client: new TrainingServiceClient({
            ...options.clientOptions,
            baseUrl: options.serviceUrl,
            apiKey: key,
            logger: {
              debug: (message) => {
                logger.debug(message);
              },
              warn: (message) => {
                logger.warn(message);
              },
            },
          }),
        };
        // A rotated key: the old client's connections are no longer needed.
        void previous?.close();
      }
      return current.client;
    },
  };
}

/**
 * The client's retry budget in Lambda: a call starts no retry later than 40 s after it began
 * (at most 3 retries, waits of at most 10 s, or a Retry-After of at most 30 s) and each attempt
 * gets 20 s, so a call gives up within a minute, well inside the Task Lambdas' timeouts. A
 * longer outage reaches the state machine's own Retry (infra/state-machine.ts) as
 * Hopper.Retryable; both together end a run against a hung service within 5 minutes
 * (docs/pipeline.md, checked by test/pipeline/service-outage.test.ts).
 */
export const LAMBDA_CLIENT_OPTIONS = {
  timeoutMs: 20_000,
  maxRetries: 3,
  backoffCapMs: 10_000,
  maxRetryAfterMs: 30_000,
  callBudgetMs: 40_000,
} as const;

/** A runtime built without a bus: an event is an error, never dropped without a word. */
const NO_EVENT_BUS: RunEventBus = {
  put: () => Promise.reject(new Error('this runtime has no event bus (RuntimeOptions.events)')),
};

let cloudRuntime: Runtime | undefined;

/** The runtime of a Lambda container: built on first use, kept for the container's life. */
export function runtimeFromEnvironment(env: NodeJS.ProcessEnv = process.env): Runtime {
  cloudRuntime ??= createRuntime({
    s3: new S3Client({}),
    serviceUrl: requireEnv(env, ENV.serviceUrl),
    apiKey: secretsManagerKey(requireEnv(env, ENV.apiKeySecret)),
    clientOptions: LAMBDA_CLIENT_OPTIONS,
    events: lazyEventBridgeBus(optionalEnv(env, ENV.eventSource) ?? DEFAULT_EVENT_SOURCE),
  });
  return cloudRuntime;
}

/**
 * EventBridge's bus, its client loaded on first use: only two steps put events, and local mode
 * never loads the EventBridge client.
 */
function lazyEventBridgeBus(source: string): RunEventBus {
  let bus: RunEventBus | undefined;
  return {
    async put(event) {
      if (bus === undefined) {
        const { eventBridgeBus } = await import('./eventbridge-bus.js');
        bus = eventBridgeBus(source);
      }
      await bus.put(event);
    },
  };
}

/** What secretsManagerKey needs of Powertools' SecretsProvider (injected in tests). */
export interface SecretReader {
  get(name: string, options: { maxAge: number }): Promise<unknown>;
}

/**
 * The key from a Secrets Manager secret (its whole SecretString), cached per container for
 * API_KEY_CACHE_SECONDS: one read per container in the common case, and a rotated key is
 * picked up within minutes.
 */
export function secretsManagerKey(secretId: string, reader?: SecretReader): ApiKeySource {
  let provider = reader;
  return async () => {
    if (provider === undefined) {
      // Loaded on first use, so local mode never loads the Secrets Manager client.
      const { SecretsProvider } = await import('@aws-lambda-powertools/parameters/secrets');
      provider = new SecretsProvider();
    }
    const value = await provider.get(secretId, { maxAge: API_KEY_CACHE_SECONDS });
    if (typeof value !== 'string' || value.trim() === '') {
      throw new RunError(
        'unauthorized',
        `the secret ${secretId} holds no API key: put the training service's key in it as plain text`,
      );
    }
    return value.trim();
  };
}

function optionalEnv(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value === '' ? undefined : value;
}

function requireEnv(env: NodeJS.ProcessEnv, name: string): string {
  const value = env[name];
  if (value === undefined || value === '') throw new Error(`environment variable ${name} is not set`);
  return value;
}
