/**
 * What a step needs from its surroundings: S3, the training service and a logger. In Lambda it
 * comes from the environment the stack sets (ENV below); local mode builds its own (an S3 client
 * on the local server, the simulated service, a key given on the command line) and binds the
 * same handlers to it with `handler.withRuntime(runtime)`.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { Logger } from '@aws-lambda-powertools/logger';
import type { Tracer } from '@aws-lambda-powertools/tracer';
import { S3Client } from '@aws-sdk/client-s3';
import { DROP_QUIET_MS } from '../drop/settle.js';
import { TrainingServiceClient, type RequestOptions } from '../service-client/index.js';
import { RunError } from './errors.js';
import type { RunEventBus } from './event-bus.js';
import { DEFAULT_EVENT_SOURCE } from './events.js';
import { SERVICE_NAME } from './metric-names.js';
import { tracedClient } from './tracing.js';
import { countS3Requests } from './s3-requests.js';
import { LAMBDA_CLIENT_OPTIONS } from './retry-budget.js';

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
  /**
   * A client with the current API key, sharing one connection pool while the key does not
   * change; `options.signal` is the deadline of its every call (the handler passes the
   * invocation's, lambdas/run/handler.ts).
   */
  service(options?: RequestOptions): Promise<TrainingServiceClient>;
  readonly logger: Logger;
  /** Milliseconds since the epoch; injected so tests can stand at a chosen time. */
  now(): number;
  /** How long a drop folder must be unchanged before validate_drop takes it (0: at once). */
  readonly dropQuietMs: number;
  /** Where the run's Started, Succeeded and Failed events go (lambdas/run/event-bus.ts). */
  readonly events: RunEventBus;
  /** X-Ray tracing (Lambda); undefined where nothing may reach an X-Ray daemon (local mode). */
  readonly tracer?: Tracer;
  /** Whether steps print CloudWatch embedded-metric lines on stdout (Lambda: yes; local mode: no). */
  readonly emitMetrics?: boolean;
  /**
   * True the first time it is asked about `functionName`, false after: a Lambda container's
   * cold start, and in local mode each function's first invocation.
   */
  coldStart?(functionName: string): boolean;
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
  /** Traces S3 and service calls. Default: none (no tracing). */
  readonly tracer?: Tracer;
  /** Default false: EMF lines only where CloudWatch Logs reads them. */
  readonly emitMetrics?: boolean;
}

const invocationLoggers = new AsyncLocalStorage<Logger>();

/** The X-Ray subsegments of service calls: `### service.<method>`. */
const SERVICE_SEGMENT = '### service';

/**
 * Runs `work` with `logger` as the logger of whatever shared part (the service client) logs on
 * its behalf, so those lines carry the invocation's keys too.
 */
export function withInvocationLogger<T>(logger: Logger, work: () => Promise<T>): Promise<T> {
  return invocationLoggers.run(logger, work);
}

export function createRuntime(options: RuntimeOptions): Runtime {
  const logger = options.logger ?? new Logger({ serviceName: SERVICE_NAME });
  const { tracer } = options;
  // `traced` is what steps get: the client itself, or a view of it that traces each call.
  let current: { key: string; client: TrainingServiceClient; traced: TrainingServiceClient } | undefined;
  // Every step's S3 requests are counted for the run's summary (lambdas/run/usage.ts).
  countS3Requests(options.s3);
  const warm = new Set<string>();
  return {
    s3: options.s3,
    logger,
    now: options.now ?? Date.now,
    dropQuietMs: options.dropQuietMs ?? DROP_QUIET_MS,
    events: options.events ?? NO_EVENT_BUS,
    tracer,
    emitMetrics: options.emitMetrics ?? false,
    coldStart(functionName) {
      // As Powertools counts it: a provisioned-concurrency container starts before it is needed.
      if (process.env.AWS_LAMBDA_INITIALIZATION_TYPE === 'provisioned-concurrency') return false;
      if (warm.has(functionName)) return false;
      warm.add(functionName);
      return true;
    },
    async service(request) {
      const key = await options.apiKey();
      if (current?.key !== key) {
        const previous = current?.client;
        const client = new TrainingServiceClient({
          ...options.clientOptions,
          baseUrl: options.serviceUrl,
          apiKey: key,
          // The client outlives invocations: it logs through the invocation's logger, keys and all.
          logger: {
            debug: (message) => {
              (invocationLoggers.getStore() ?? logger).debug(message);
            },
            warn: (message) => {
              (invocationLoggers.getStore() ?? logger).warn(message);
            },
          },
        });
        current = { key, client, traced: tracedClient(client, tracer, SERVICE_SEGMENT) };
        // A rotated key: the old client's connections are no longer needed.
        void previous?.close();
      }
      if (request?.signal === undefined) return current.traced;
      return tracedClient(current.client.withOptions(request), tracer, SERVICE_SEGMENT);
    },
  };
}

// The client's settings in Lambda, with the state machine's Retry in one place (retry-budget.ts).
export { LAMBDA_CLIENT_OPTIONS } from './retry-budget.js';

/** A runtime built without a bus: an event is an error, never dropped without a word. */
const NO_EVENT_BUS: RunEventBus = {
  put: () => Promise.reject(new Error('this runtime has no event bus (RuntimeOptions.events)')),
};

let cloudRuntime: Promise<Runtime> | undefined;

/**
 * The runtime of a Lambda container: built on first use, kept for the container's life. The
 * tracer is loaded here only: the X-Ray SDK under it tracks every promise through async_hooks
 * (cls-hooked), which made each promise about 20 times costlier wherever it was imported
 * (docs/performance.md). Local mode, the tests and the benchmarks never load it.
 */
export function runtimeFromEnvironment(env: NodeJS.ProcessEnv = process.env): Promise<Runtime> {
  cloudRuntime ??= (async () => {
    const { Tracer } = await import('@aws-lambda-powertools/tracer');
    // Enabled in Lambda unless POWERTOOLS_TRACE_ENABLED=false; S3 and Secrets Manager calls
    // get subsegments of their own through the captured SDK clients.
    const tracer = new Tracer({ serviceName: SERVICE_NAME });
    return createRuntime({
      s3: tracer.captureAWSv3Client(new S3Client({})),
      serviceUrl: requireEnv(env, ENV.serviceUrl),
      apiKey: secretsManagerKey(requireEnv(env, ENV.apiKeySecret), undefined, tracer),
      clientOptions: LAMBDA_CLIENT_OPTIONS,
      tracer,
      emitMetrics: true,
      events: lazyEventBridgeBus(optionalEnv(env, ENV.eventSource) ?? DEFAULT_EVENT_SOURCE),
    });
  })();
  cloudRuntime.catch(() => {
    cloudRuntime = undefined; // a bad environment: the next invocation tries again (and says why)
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
export function secretsManagerKey(secretId: string, reader?: SecretReader, tracer?: Tracer): ApiKeySource {
  let provider = reader;
  return async () => {
    if (provider === undefined) {
      // Loaded on first use, so local mode never loads the Secrets Manager client.
      const [{ SecretsProvider }, { SecretsManagerClient }] = await Promise.all([
        import('@aws-lambda-powertools/parameters/secrets'),
        import('@aws-sdk/client-secrets-manager'),
      ]);
      const client = new SecretsManagerClient({});
      provider = new SecretsProvider({ awsSdkV3Client: tracer?.captureAWSv3Client(client) ?? client });
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
