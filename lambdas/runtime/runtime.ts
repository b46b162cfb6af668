/**
 * What a step needs from its surroundings: S3, the training service and a logger. In Lambda it
 * comes from the environment the stack sets (lambdas/runtime/environment.ts), wired by each entry
 * file with only what its function uses (LambdaConnections), so a function that never calls the
 * training service bundles neither its client nor undici. Local mode builds its own (an S3
 * client on the local server, the simulated service, a key given on the command line) and binds
 * the same handlers to it with `handler.withRuntime(runtime)`.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import type { Tracer } from '@aws-lambda-powertools/tracer';
import { S3Client } from '@aws-sdk/client-s3';
import { DROP_QUIET_MS } from '../drop/settle.js';
import type { RequestOptions, TrainingServiceClient } from '../service-client/index.js';
import type { RunEventBus } from '../records/events/event-bus.js';
import { creditsOf, type CreditBudget, type Credits } from '../ownership/credit-ledger.js';
import type { ExecutionLookup } from '../ownership/training-claim.js';
import type { SFNClient } from '@aws-sdk/client-sfn';
import { ENV } from './environment.js';
import { SERVICE_NAME } from './metric-names.js';
import { emitCreditBudgetUse } from './metrics.js';
import { countS3Requests } from './s3-requests.js';
import { currentInvocation } from './invocation-scope.js';

export interface Runtime {
  readonly s3: S3Client;
  /**
   * A client with the current API key, sharing one connection pool while the key does not
   * change; `options.signal` is the deadline of its every call (the handler passes the
   * invocation's, lambdas/runtime/handler.ts). Rejects in a runtime built without a training
   * service (a function that never calls it).
   */
  service(options?: RequestOptions): Promise<TrainingServiceClient>;
  readonly logger: Logger;
  /** Milliseconds since the epoch; injected so tests can stand at a chosen time. */
  now(): number;
  /** How long a drop folder must be unchanged before validate_drop takes it (0: at once). */
  readonly dropQuietMs: number;
  /** Where the run's Started, Succeeded and Failed events go (lambdas/records/events/event-bus.ts). */
  readonly events: RunEventBus;
  /** The credit budget: takes and gives back the credits of trainings (lambdas/ownership/credit-ledger.ts). */
  readonly credits: Credits;
  /**
   * Whether another run's execution still runs (lambdas/runtime/executions.ts); undefined in a
   * function whose entry file does not connect Step Functions: no run is then known ended by it.
   */
  readonly executions?: ExecutionLookup;
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

/**
 * How a runtime reaches the training service (lambdas/runtime/training-service.ts): given the
 * runtime's logger and tracer, a function returning the client to use now.
 */
export type ServiceConnector = (use: {
  readonly logger: Logger;
  readonly tracer: Tracer | undefined;
}) => (options?: RequestOptions) => Promise<TrainingServiceClient>;

/**
 * How a bundle connects to the training service: in Lambda from its environment (the URL, and the
 * key's secret), in local mode from what local mode hands it (LocalRuntimeOptions). Either way the
 * client is the bundle's own code, so its error classes are the ones its steps check for.
 */
export interface ServiceConnection {
  fromEnvironment(env: NodeJS.ProcessEnv, tracer: Tracer): ServiceConnector;
  fromOptions(options: TrainingServiceOptions): ServiceConnector;
}

/**
 * How a bundle reaches Step Functions (executions.ts): in Lambda its own client, in local mode
 * local mode's.
 */
export interface ExecutionsConnection {
  fromEnvironment(tracer: Tracer, logger: Logger): ExecutionLookup;
  fromClient(sfn: SFNClient, logger: Logger): ExecutionLookup;
}

/**
 * What local mode gives a handler bundle to build its runtime from (TaskHandler.withLocalRuntime):
 * plain options and SDK clients, never objects of its own copy of Hopper's code. The training
 * service is used only where the bundle's entry file connects it, as in Lambda.
 */
export interface LocalRuntimeOptions extends Omit<RuntimeOptions, 'service' | 'executions'> {
  readonly service?: TrainingServiceOptions;
  /** Local mode's Step Functions (its executions endpoint), where the entry file connects it. */
  readonly sfn?: SFNClient;
}

/**
 * What createRuntime builds a runtime from: the S3 client, and any of the rest of Runtime. Left
 * out: no training service (service() rejects), a bus that refuses every event (the steps then
 * fail), no tracing, no EMF lines (they belong only where CloudWatch Logs reads them), no credit
 * budget, and DROP_QUIET_MS (0 where the caller uploads train.json last itself: hopper run).
 */
export interface RuntimeOptions
  extends
    Pick<Runtime, 's3'>,
    Partial<Pick<Runtime, 'logger' | 'dropQuietMs' | 'events' | 'tracer' | 'emitMetrics'>> {
  readonly service?: ServiceConnector;
  /** Step Functions, given the runtime's logger (ExecutionsConnection). */
  readonly executions?: (logger: Logger) => ExecutionLookup;
  readonly now?: () => number;
  readonly creditBudget?: CreditBudget;
}

/** The logger of the invocation running now (invocation-scope.ts), else `fallback`. */
export function invocationLogger(fallback: Logger): Logger {
  return currentInvocation()?.logger ?? fallback;
}

export function createRuntime(options: RuntimeOptions): Runtime {
  const logger = options.logger ?? new Logger({ serviceName: SERVICE_NAME });
  const { tracer } = options;
  const service = options.service?.({ logger, tracer }) ?? NO_SERVICE;
  // Every step's S3 requests are counted for the run's summary (lambdas/records/status/usage.ts).
  countS3Requests(options.s3);
  const warm = new Set<string>();
  const now = options.now ?? Date.now;
  // A credit taken puts the budget's share in use as a metric, where metrics are emitted.
  const taken = options.emitMetrics === true ? emitCreditBudgetUse : undefined;
  return {
    s3: options.s3,
    logger,
    now,
    dropQuietMs: options.dropQuietMs ?? DROP_QUIET_MS,
    events: options.events ?? NO_EVENT_BUS,
    executions: options.executions?.(logger),
    tracer,
    emitMetrics: options.emitMetrics ?? false,
    credits: creditsOf(options.s3, options.creditBudget ?? {}, now, taken),
    coldStart(functionName) {
      // As Powertools counts it: a provisioned-concurrency container starts before it is needed.
      if (process.env.AWS_LAMBDA_INITIALIZATION_TYPE === 'provisioned-concurrency') return false;
      if (warm.has(functionName)) return false;
      warm.add(functionName);
      return true;
    },
    service,
  };
}

/** A runtime built without a bus: an event is an error, never dropped without a word. */
const NO_EVENT_BUS: RunEventBus = {
  put: () => Promise.reject(new Error('this runtime has no event bus (RuntimeOptions.events)')),
};

/** A runtime built without the training service: a call is an error naming why. */
const NO_SERVICE = (): Promise<TrainingServiceClient> =>
  Promise.reject(new Error('this runtime has no training service (RuntimeOptions.service)'));

/**
 * What a Lambda function connects to besides S3, chosen by its entry file (lambdas/handlers/) as
 * its Task's access in infra/tasks.ts says: what is not named here is not in its bundle.
 */
export interface LambdaConnections {
  /** The training service (TRAINING_SERVICE, lambdas/runtime/training-service.ts). */
  readonly service?: ServiceConnection;
  /** Where run events go (eventBridgeFromEnvironment, lambdas/runtime/eventbridge-bus.ts). */
  readonly events?: (env: NodeJS.ProcessEnv) => RunEventBus;
  /** Step Functions, to tell whether another run's execution runs (STEP_FUNCTIONS, executions.ts). */
  readonly executions?: ExecutionsConnection;
}

let cloudRuntime: Promise<Runtime> | undefined;

/**
 * The runtime of a Lambda container: built on first use, kept for the container's life. The
 * tracer is loaded here only: the X-Ray SDK under it tracks every promise through async_hooks
 * (cls-hooked), which made each promise about 20 times costlier wherever it was imported
 * (docs/performance.md). Local mode, the tests and the benchmarks never load it.
 */
export function runtimeFromEnvironment(
  env: NodeJS.ProcessEnv = process.env,
  connections: LambdaConnections = {},
): Promise<Runtime> {
  cloudRuntime ??= (async () => {
    const { Tracer } = await import('@aws-lambda-powertools/tracer');
    // Enabled in Lambda unless POWERTOOLS_TRACE_ENABLED=false; S3 and Secrets Manager calls
    // get subsegments of their own through the captured SDK clients.
    const tracer = new Tracer({ serviceName: SERVICE_NAME });
    const { executions } = connections;
    return createRuntime({
      s3: tracer.captureAWSv3Client(new S3Client({})),
      tracer,
      emitMetrics: true,
      // The budget the stack gives the functions that take credits (infra/constructs/pipeline.ts).
      creditBudget: {
        perDay: Number(env[ENV.creditBudget]) || undefined,
        per30Days: Number(env[ENV.creditBudget30Days]) || undefined,
      },
      ...(connections.service === undefined
        ? {}
        : { service: connections.service.fromEnvironment(env, tracer) }),
      ...(connections.events === undefined ? {} : { events: connections.events(env) }),
      ...(executions === undefined
        ? {}
        : { executions: (logger: Logger) => executions.fromEnvironment(tracer, logger) }),
    });
  })();
  cloudRuntime.catch(() => {
    cloudRuntime = undefined; // a bad environment: the next invocation tries again (and says why)
  });
  return cloudRuntime;
}

/** Where the API key comes from; never logged, never part of a state. */
export type ApiKeySource = () => Promise<string>;

export interface TrainingServiceOptions {
  readonly serviceUrl: string;
  readonly apiKey: ApiKeySource;
  /** Passed to every TrainingServiceClient (timeouts, retries); not the base URL or key. */
  readonly clientOptions?: Partial<
    Omit<ConstructorParameters<typeof TrainingServiceClient>[0], 'baseUrl' | 'apiKey'>
  >;
}
