/**
 * Local mode: the whole pipeline on one machine. S3 is s3rver on loopback; its object-created
 * events go through the trigger's bundle as EventBridge would deliver them; the state machine
 * is the definition synthesized from the CDK construct (dist/definition.json), run by
 * aws-local-stepfunctions with every Task state calling the handler bundle the construct deploys,
 * in-process; the training service is the simulated one, or another given by URL and key.
 * `hopper run` and `hopper local` are built on this.
 */
import { join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import type { LogLevel } from '@aws-lambda-powertools/logger/types';
import type { S3Client } from '@aws-sdk/client-s3';
import { SFNClient } from '@aws-sdk/client-sfn';
import { loadLocalDefinition, type AslDefinition, type LocalDefinition } from './definition.js';
import { TASKS, TRIGGER, bundleName, type TaskName } from '../../infra/tasks.js';
import { messageOf } from '../../lambdas/core/errors/index.js';
import type { LocalRuntimeOptions, TaskHandler } from '../../lambdas/runtime/index.js';
import {
  LAMBDA_CLIENT_OPTIONS,
  trainingService,
  type ApiKeySource,
  type TrainingServiceOptions,
} from '../../lambdas/runtime/index.js';
import type { CreditBudget } from '../../lambdas/ownership/index.js';
import type { StepName } from '../../lambdas/core/state/index.js';
import type { TrainingServiceClient } from '../../lambdas/service-client/index.js';
import type { withStarter } from '../../lambdas/handlers/trigger.handler.js';
import type { RunEventBus } from '../../lambdas/records/events/index.js';
import type { ExecutionStarter, TriggerResult } from '../../lambdas/trigger/start-execution.js';
import { handlerBundle } from '../files.js';
import {
  LOCAL_S3_CREDENTIALS,
  LOCAL_S3_REGION,
  localS3Client,
  startLocalS3,
  type LocalS3,
} from '../s3/local-s3.js';
import {
  startSimulatedService,
  type SimulatedService,
  type SimulatedServiceOptions,
} from '../service/index.js';
import { markInterruptedRuns } from './interrupted-runs.js';
import { startExecutionsEndpoint } from './executions-endpoint.js';
import { LocalEventBus } from './event-bus.js';
import { asLambda, refuseAbandonedRequests, RunningInvocations } from './lambda-invoke.js';
import { connectS3Events } from './s3-events.js';
import { LocalStateMachine } from './state-machine.js';

/**
 * What local mode asks of a recorder of the functions' AWS calls (test/helpers/aws-call-recorder.ts,
 * for the permissions check): each function's calls are made inside `as(name, ...)`.
 */
export interface AwsCallRecorder {
  as<A, R>(name: string, fn: (input: A) => Promise<R>): (input: A) => Promise<R>;
  attach(client: S3Client | SFNClient): void;
  eventBus(bus: RunEventBus): RunEventBus;
  starter(starter: ExecutionStarter): ExecutionStarter;
}

export interface LocalModeOptions {
  /** Port of the local S3 endpoint. Default: a free port. */
  readonly s3Port?: number;
  /** Another training service (e.g. the real one). Default: the simulated service, started here. */
  readonly service?: { readonly url: string; readonly apiKey: string };
  /** Knobs of the simulated service (ignored with `service`). */
  readonly simulated?: Partial<SimulatedServiceOptions>;
  /** Milliseconds every Wait state sleeps instead of the poll handler's seconds. Default: real waits. */
  readonly waitMs?: number;
  /**
   * The clock the handlers read (when they compare with the service's timestamps, say). Default
   * Date.now; tests that move the simulated service's clock pass that clock.
   */
  readonly now?: () => number;
  /** Milliseconds every Retry pauses instead of its backoff. Default: real pauses. */
  readonly retryPauseMs?: number;
  /**
   * How long a drop folder must be unchanged before a run takes it. Default DROP_QUIET_MS, as in
   * Lambda (S3 clients upload in their own order); `hopper run` uploads train.json last itself
   * and passes 0.
   */
  readonly dropQuietMs?: number;
  /** Level of the handlers' own logs (JSON lines on stdout). Default 'SILENT'. */
  readonly logLevel?: LogLevel;
  /**
   * The service client's timeouts and retry budget. Default: Lambda's (LAMBDA_CLIENT_OPTIONS);
   * tests shrink them to see a hung service's bound in seconds rather than minutes.
   */
  readonly clientOptions?: TrainingServiceOptions['clientOptions'];
  /**
   * Wraps what answers a Task state, for fault tests (an invocation whose answer is lost after
   * its handler ran, say). Default: none.
   */
  readonly wrapTask?: (name: TaskName, task: LocalTask) => LocalTask;
  /**
   * Milliseconds after the start during which the bucket's S3 events are lost, as S3 may send
   * none for minutes after a bucket's EventBridge notifications are turned on (docs/deploy.md,
   * "Check the deployment"; what `hopper doctor`'s probe finds). Default 0: delivered at once.
   */
  readonly eventBridgeWarmUpMs?: number;
  /** Told about an S3 event the trigger could not take (default: written to stderr). */
  readonly onTriggerError?: (key: string, error: unknown) => void;
  /**
   * Where local state is kept across restarts: the bucket's objects (`<dataDir>/s3`) and the
   * simulated service's records and credits (`<dataDir>/service.json`). Default: a temporary
   * folder removed on close, and a fresh service. Runs found still `running` are marked interrupted.
   */
  readonly dataDir?: string;
  /** The credit budget (`--credit-budget`), as `-c creditBudget` sets it at deploy. Default: none. */
  readonly creditBudget?: CreditBudget;
  /**
   * Lambda timeouts in seconds for some Tasks, in place of infra/tasks.ts's (tests make a function
   * time out, or its time box end, in seconds). The definition's TimeoutSeconds stay as deployed
   * (the Lambda timeout plus a minute), so a shorter Lambda timeout still ends as Sandbox.Timedout.
   * Default: each Task's own.
   */
  readonly lambdaTimeoutSeconds?: Partial<Readonly<Record<TaskName, number>>>;
  /** Records each function's AWS calls (the permissions check). Default: none. */
  readonly recorder?: AwsCallRecorder;
  /** Where the handlers read the service's API key, as Lambda reads its secret. Default: the service's key. */
  readonly apiKey?: ApiKeySource;
}

/** Local mode running: what startLocalMode returns. */
export interface LocalMode {
  readonly s3: LocalS3;
  readonly bucket: string;
  /** The training service's base URL. */
  readonly serviceUrl: string;
  /** The simulated service, when local mode started one. */
  readonly simulated: SimulatedService | undefined;
  /** The S3 client of a Task's function (tests put faults in its way). */
  readonly functionS3: (name: TaskName) => S3Client | undefined;
  /** A client of the training service, as the steps have it (the key stays inside). */
  readonly service: () => Promise<TrainingServiceClient>;
  readonly stateMachine: LocalStateMachine;
  /** The definition the state machine runs (synthesized from the stack). */
  readonly definition: AslDefinition;
  /** The drops whose run was still `running` in the data directory, now marked interrupted. */
  readonly interrupted: readonly string[];
  /** The state machine's executions over Step Functions' API (for `hopper runs`). */
  readonly executions: { readonly url: string; readonly stateMachineArn: string };
  /** Where the runs' Started, Succeeded and Failed events go (in place of EventBridge). */
  readonly events: LocalEventBus;
  /**
   * Hands an event to the trigger, as the EventBridge rule does; s3rver's events arrive here on
   * their own. Tests call it to deliver one event twice.
   */
  readonly deliver: (event: unknown) => Promise<TriggerResult>;
  /** Stops every execution, then the S3 server and the simulated service. */
  readonly close: () => Promise<void>;
}

/** What answers a Task state: its input in, the Task's result out (see lambda-invoke.ts). */
export type LocalTask = (input: unknown) => Promise<unknown>;

/** How long close() waits for handlers still running when their executions are stopped. */
const INVOCATIONS_SETTLE_MS = 10_000;

/** What close() runs, last added first. */
type Cleanups = (() => Promise<void>)[];

/** The trigger's handler bundle (dist/handlers/trigger), as local mode loads it. */
interface TriggerBundle {
  readonly withStarter: typeof withStarter;
}

export async function startLocalMode(options: LocalModeOptions = {}): Promise<LocalMode> {
  const cleanups: Cleanups = [];
  const closeAll = async (): Promise<void> => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  };
  try {
    // Read first: a missing build fails before anything listens.
    const local = loadLocalDefinition();
    const s3 = await startS3(options);
    cleanups.push(() => s3.close());
    // A handler of a stopped execution can still be writing its status (Lambda would let it run
    // on too): the bucket is removed only once those are done, or after a bound.
    const invocations = new RunningInvocations();
    cleanups.push(() => invocations.settled(INVOCATIONS_SETTLE_MS));
    const simulated = await startSimulated(options, invocations, cleanups);
    const service = options.service ?? { url: simulated?.apiUrl ?? '', apiKey: simulated?.apiKey ?? '' };
    // Before anything can start a run: only a run of an earlier local mode is `running` now. The
    // service is asked for the model of a training a stop cut off (its answer lost).
    const interrupted = await markInterruptedRuns(
      s3.client,
      s3.bucket,
      Date.now(),
      serviceClient(options, service),
    );
    const logger = new Logger({ serviceName: 'hopper', logLevel: options.logLevel ?? 'SILENT' });
    const events = new LocalEventBus();
    const s3Clients = functionS3Clients(s3.endpoint, cleanups);
    // The functions' Step Functions client, once its endpoint listens (before any Task runs).
    const stepFunctions: { client?: SFNClient } = {};
    const runtime = {
      ...handlerRuntime(options, { events, logger, service }),
      s3: s3Clients.create,
      sfn: () => stepFunctions.client,
    };
    const tasks = taskHandlers(local, runtime, invocations, options);
    const { stateMachine, executions } = await startStateMachine(local, tasks, options, cleanups);
    stepFunctions.client = functionSfnClient(executions.url, options.recorder, cleanups);
    const trigger = await startTrigger(
      { stateMachine, s3, functionS3: s3Clients.create('Trigger'), logger },
      options,
      cleanups,
    );

    return {
      s3,
      bucket: s3.bucket,
      serviceUrl: service.url,
      simulated,
      functionS3: (name) => s3Clients.clients.get(name),
      service: serviceClient(options, service),
      stateMachine,
      definition: local.definition,
      interrupted,
      executions: { url: executions.url, stateMachineArn: executions.stateMachineArn },
      events,
      deliver: trigger,
      close: closeAll,
    };
  } catch (error) {
    await closeAll();
    throw error;
  }
}

/** Each function its own S3 client, as in Lambda (each bundle meters its own requests). */
function functionS3Clients(endpoint: string, cleanups: Cleanups) {
  const clients = new Map<string, S3Client>();
  const create = (functionName: string): S3Client => {
    const client = localS3Client(endpoint);
    // An invocation past its Lambda timeout writes nothing more (lambda-invoke.ts).
    refuseAbandonedRequests(client);
    clients.set(functionName, client);
    cleanups.push(() => {
      client.destroy();
      return Promise.resolve();
    });
    return client;
  };
  return { clients, create };
}

/** The state machine running `tasks`, and its executions endpoint; `cleanups` stop both. */
async function startStateMachine(
  local: LocalDefinition,
  tasks: Record<string, LocalTask>,
  options: LocalModeOptions,
  cleanups: Cleanups,
) {
  const stateMachine = new LocalStateMachine({
    definition: local.definition,
    tasks,
    waitMs: options.waitMs,
    retryPauseMs: options.retryPauseMs,
  });
  cleanups.push(() => stateMachine.stopAll());
  const executions = await startExecutionsEndpoint(stateMachine);
  cleanups.push(() => executions.close());
  return { stateMachine, executions };
}

/**
 * The trigger's bundle starting executions of `stateMachine`, and the bucket's object-created
 * events delivered to it as the EventBridge rule does.
 */
async function startTrigger(
  {
    stateMachine,
    s3,
    functionS3,
    logger,
  }: { stateMachine: LocalStateMachine; s3: LocalS3; functionS3: S3Client; logger: Logger },
  options: LocalModeOptions,
  cleanups: Cleanups,
): Promise<ReturnType<typeof withStarter>> {
  const { recorder } = options;
  recorder?.attach(functionS3);
  const bundle = (await import(handlerBundle(bundleName(TRIGGER.handlerFile)).href)) as TriggerBundle;
  const starter = recorder?.starter(stateMachine) ?? stateMachine;
  const starts = bundle.withStarter(starter, { logger, s3: functionS3 });
  const trigger = recorder?.as('Trigger', starts) ?? starts;
  const s3Events = connectS3Events({
    // A kept bucket outlives this start: its version ids (hence run ids) must not repeat.
    ...(options.dataDir === undefined ? {} : { versionPrefix: `local-${Date.now().toString(36)}-` }),
    server: s3.server,
    s3: s3.client,
    deliver: trigger,
    warmUpMs: options.eventBridgeWarmUpMs,
    onError:
      options.onTriggerError ??
      ((key, error) => {
        process.stderr.write(`hopper: the S3 event for ${key} started no run: ${messageOf(error)}\n`);
      }),
  });
  // Closed before the state machine stops: no execution starts while shutting down.
  cleanups.push(() => s3Events.close());
  return trigger;
}

function startS3(options: LocalModeOptions): Promise<LocalS3> {
  const directory = options.dataDir === undefined ? undefined : join(options.dataDir, 's3');
  // Its bucket sends EventBridge events (connectS3Events), and says so when asked.
  return startLocalS3({ port: options.s3Port, directory, eventBridge: true });
}

/** The simulated service, unless the options give another; `cleanups` close it. */
async function startSimulated(
  options: LocalModeOptions,
  invocations: RunningInvocations,
  cleanups: Cleanups,
): Promise<SimulatedService | undefined> {
  if (options.service !== undefined) return undefined;
  const simulated = await startSimulatedService(
    options.simulated ?? {},
    options.dataDir === undefined ? undefined : { stateFile: join(options.dataDir, 'service.json') },
  );
  // Most steps end in milliseconds while the service still answers; one held by a stalled
  // answer is left to the wait after the service has closed, which fails that answer.
  cleanups.push(
    () => simulated.close(),
    () => invocations.settled(INVOCATIONS_SETTLE_MS / 5),
  );
  return simulated;
}

/**
 * The functions' Step Functions client, on local mode's executions endpoint: what the bundles
 * whose entry file connects Step Functions ask (DescribeExecution), as in Lambda.
 */
function functionSfnClient(
  endpoint: string,
  recorder: AwsCallRecorder | undefined,
  cleanups: Cleanups,
): SFNClient {
  // Local mode's one region and dummy credentials, as its S3 clients have them.
  const client = new SFNClient({ endpoint, region: LOCAL_S3_REGION, credentials: LOCAL_S3_CREDENTIALS });
  recorder?.attach(client);
  cleanups.push(() => {
    client.destroy();
    return Promise.resolve();
  });
  return client;
}

/**
 * What each handler bundle builds its runtime from, but its S3 client (one per function) and
 * the Step Functions client (there once the executions endpoint listens).
 */
type BundleRuntime = Omit<LocalRuntimeOptions, 's3' | 'sfn'> & {
  readonly s3: (functionName: string) => S3Client;
  readonly sfn: () => SFNClient | undefined;
};

/** Each Task state's handler bundle, called as Lambda calls it (and wrapped, when the options ask). */
function taskHandlers(
  local: LocalDefinition,
  runtime: BundleRuntime,
  invocations: RunningInvocations,
  { wrapTask, recorder, lambdaTimeoutSeconds }: LocalModeOptions,
): Record<string, LocalTask> {
  const tasks: Record<string, LocalTask> = {};
  for (const task of TASKS) {
    const s3 = runtime.s3(task.name);
    recorder?.attach(s3);
    // Loaded when the Task first runs, as Lambda loads a function's code on its first invocation
    // (and before its timeout starts): a bundle takes a few hundred milliseconds to load, and
    // many local modes never reach most Tasks.
    let loading: Promise<LocalTask> | undefined;
    const load = async (): Promise<LocalTask> => {
      const module = (await import(handlerBundle(local.handlers[task.name]).href)) as {
        handler: TaskHandler<StepName>;
      };
      const handler = module.handler.withLocalRuntime({ ...runtime, s3, sfn: runtime.sfn() });
      const timeoutSeconds = lambdaTimeoutSeconds?.[task.name] ?? task.timeoutSeconds;
      return asLambda(invocations.track(handler), timeoutSeconds, {
        functionName: task.name,
        memoryMb: task.memoryMb,
      });
    };
    const lambda: LocalTask = async (input) => (await (loading ??= load()))(input);
    const recorded = recorder?.as(task.name, lambda) ?? lambda;
    tasks[task.name] = wrapTask?.(task.name, recorded) ?? recorded;
  }
  return tasks;
}

/** The training service the handlers reach: the one the options give, or the simulated one. */
type Service = NonNullable<LocalModeOptions['service']>;

/** What the handlers run with here: as in Lambda, but for tracing and metrics. */
function handlerRuntime(
  options: LocalModeOptions,
  { events, logger, service }: { events: LocalEventBus; logger: Logger; service: Service },
): Omit<LocalRuntimeOptions, 's3'> {
  return {
    logger,
    events: options.recorder?.eventBus(events) ?? events,
    service: serviceOptions(options, service, options.apiKey),
    dropQuietMs: options.dropQuietMs,
    now: options.now,
    creditBudget: options.creditBudget,
    // No tracer and no EMF lines: nothing here may reach an X-Ray daemon, and stdout is the user's.
  };
}

/** How `service` is reached: by default with its own key. */
function serviceOptions(
  options: LocalModeOptions,
  service: Service,
  apiKey: ApiKeySource = () => Promise.resolve(service.apiKey),
): TrainingServiceOptions {
  // The same retry budget as in Lambda, which fits the Tasks' timeouts enforced here too.
  return { serviceUrl: service.url, apiKey, clientOptions: options.clientOptions ?? LAMBDA_CLIENT_OPTIONS };
}

/** A client of the service the handlers use, for the commands and tests (the key stays inside). */
function serviceClient(options: LocalModeOptions, service: Service): () => Promise<TrainingServiceClient> {
  const logger = new Logger({ serviceName: 'hopper', logLevel: 'SILENT' });
  return trainingService(serviceOptions(options, service))({ logger, tracer: undefined });
}
