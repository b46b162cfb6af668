/**
 * Local mode: the whole pipeline on one machine. S3 is s3rver on loopback; its object-created
 * events go through the trigger handler as EventBridge would deliver them; the state machine
 * is the definition synthesized from the CDK stack, run by aws-local-stepfunctions with every
 * Task state calling its real handler in-process; the training service is the simulated one,
 * or another given by URL and key. `hopper run` and `hopper local` are built on this.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import type { LogLevel } from '@aws-lambda-powertools/logger/types';
import { synthesizeLocalDefinition, type LocalDefinition } from '../../infra/definition.js';
import { TASKS } from '../../infra/tasks.js';
import { messageOf } from '../../lambdas/run/errors.js';
import type { TaskHandler } from '../../lambdas/run/handler.js';
import { createRuntime, LAMBDA_CLIENT_OPTIONS, type RuntimeOptions } from '../../lambdas/run/runtime.js';
import type { SlotName } from '../../lambdas/run/state.js';
import { createTriggerHandler, type TriggerResult } from '../../lambdas/steps/trigger.js';
import { startLocalS3, type LocalS3 } from '../s3/local-s3.js';
import {
  startSimulatedService,
  type SimulatedService,
  type SimulatedServiceOptions,
} from '../service/index.js';
import { asLambda } from './lambda-invoke.js';
import { connectS3Events } from './s3-events.js';
import { LocalStateMachine } from './state-machine.js';

export interface LocalModeOptions {
  /** Port of the local S3 endpoint. Default: a free port. */
  readonly s3Port?: number;
  /** Another training service (e.g. the real one). Default: the simulated service, started here. */
  readonly service?: { readonly url: string; readonly apiKey: string };
  /** Knobs of the simulated service (ignored with `service`). */
  readonly simulated?: Partial<SimulatedServiceOptions>;
  /** Milliseconds every Wait state sleeps instead of the poll handler's seconds. Default: real waits. */
  readonly waitMs?: number;
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
  readonly clientOptions?: RuntimeOptions['clientOptions'];
  /** Told about an S3 event the trigger could not take (default: written to stderr). */
  readonly onTriggerError?: (key: string, error: unknown) => void;
}

export interface LocalMode {
  readonly s3: LocalS3;
  readonly bucket: string;
  /** The training service's base URL. */
  readonly serviceUrl: string;
  /** The simulated service, when local mode started one. */
  readonly simulated: SimulatedService | undefined;
  readonly stateMachine: LocalStateMachine;
  /**
   * Hands an event to the trigger, as the EventBridge rule does; s3rver's events arrive here on
   * their own. Tests call it to deliver one event twice.
   */
  deliver(event: unknown): Promise<TriggerResult>;
  /** Stops every execution, then the S3 server and the simulated service. */
  close(): Promise<void>;
}

let synthesized: LocalDefinition | undefined;

/** The stack's definition, synthesized once per process (it depends on the code alone). */
function localDefinition(): LocalDefinition {
  synthesized ??= synthesizeLocalDefinition();
  return synthesized;
}

export async function startLocalMode(options: LocalModeOptions = {}): Promise<LocalMode> {
  const cleanups: (() => Promise<void>)[] = [];
  const closeAll = async (): Promise<void> => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  };
  try {
    // Synthesizing first: a broken stack fails before anything listens.
    const local = localDefinition();
    const s3 = await startLocalS3(options.s3Port === undefined ? {} : { port: options.s3Port });
    cleanups.push(() => s3.close());
    let simulated: SimulatedService | undefined;
    if (options.service === undefined) {
      const started = await startSimulatedService(options.simulated ?? {});
      cleanups.push(() => started.close());
      simulated = started;
    }
    const service = options.service ?? { url: simulated?.apiUrl ?? '', apiKey: simulated?.apiKey ?? '' };
    const logger = new Logger({ serviceName: 'hopper', logLevel: options.logLevel ?? 'SILENT' });
    const runtime = createRuntime({
      s3: s3.client,
      serviceUrl: service.url,
      apiKey: () => Promise.resolve(service.apiKey),
      logger,
      // The same retry budget as in Lambda, which fits the Tasks' timeouts enforced here too.
      clientOptions: options.clientOptions ?? LAMBDA_CLIENT_OPTIONS,
      ...(options.dropQuietMs === undefined ? {} : { dropQuietMs: options.dropQuietMs }),
      // No tracer and no EMF lines: nothing here may reach an X-Ray daemon, and stdout is the user's.
    });

    const tasks: Record<string, (input: unknown) => Promise<unknown>> = {};
    for (const task of TASKS) {
      const module = (await import(local.handlers[task.name].path)) as { handler: TaskHandler<SlotName> };
      tasks[task.name] = asLambda(module.handler.withRuntime(runtime), task.timeoutSeconds, {
        functionName: task.name,
        memoryMb: task.memoryMb,
      });
    }
    const stateMachine = new LocalStateMachine({
      definition: local.definition,
      tasks,
      ...(options.waitMs === undefined ? {} : { waitMs: options.waitMs }),
      ...(options.retryPauseMs === undefined ? {} : { retryPauseMs: options.retryPauseMs }),
    });
    cleanups.push(() => stateMachine.stopAll());

    const trigger = createTriggerHandler(stateMachine, { logger });
    const events = connectS3Events({
      server: s3.server,
      s3: s3.client,
      deliver: trigger,
      onError:
        options.onTriggerError ??
        ((key, error) => {
          process.stderr.write(`hopper: the S3 event for ${key} started no run: ${messageOf(error)}\n`);
        }),
    });
    // Closed before the state machine stops: no execution starts while shutting down.
    cleanups.push(() => events.close());

    return {
      s3,
      bucket: s3.bucket,
      serviceUrl: service.url,
      simulated,
      stateMachine,
      deliver: trigger,
      close: closeAll,
    };
  } catch (error) {
    await closeAll();
    throw error;
  }
}
