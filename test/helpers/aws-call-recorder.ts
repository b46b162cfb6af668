/**
 * Records the AWS calls each function makes in local mode, for the permissions check
 * (local/permissions/, test/permissions/recording.test.ts): the function (a Task's state name, or Trigger), the operation and the
 * parameters IAM decides on. S3 and Secrets Manager calls are read off the SDK clients'
 * middleware stacks; the event bus and StartExecution, which local mode answers without an SDK
 * client, are recorded where local mode answers them. Nothing here reaches the deployed handlers.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { RunEventBus } from '../../lambdas/records/events/index.js';
import { DOCTOR_SEEN_PREFIX } from '../../lambdas/storage/keys.js';
import type { ExecutionStarter } from '../../lambdas/trigger/start-execution.js';
import type { AwsCall } from '../../local/permissions/index.js';

/** The function whose calls a client's middleware sees: set around each invocation. */
const current = new AsyncLocalStorage<string>();

/** What the recorder reads of an SDK client: its middleware stack. */
interface SdkClient {
  readonly middlewareStack: {
    add(
      middleware: (
        next: (args: { input: object }) => Promise<unknown>,
        context: { commandName?: string },
      ) => (args: { input: object }) => Promise<unknown>,
      options: { step: 'initialize'; name: string; override: true },
    ): void;
  };
}

export class AwsCallRecorder {
  readonly #calls = new Map<string, AwsCall>();

  /** `fn`, the calls it makes recorded as function `name`'s. */
  as<A, R>(name: string, fn: (input: A) => Promise<R>): (input: A) => Promise<R> {
    return (input) => current.run(name, () => fn(input));
  }

  /** Records every call of `client` made as a function's (others are local mode's own). */
  attach(client: SdkClient): void {
    client.middlewareStack.add(
      (next, context) => (args) => {
        const input = args.input as Readonly<Record<string, unknown>>;
        const call = {
          key: areaOf(input.Key),
          prefix: areaOf(input.Prefix),
          versioned: typeof input.VersionId === 'string' ? (true as const) : undefined,
        };
        const operation = (context.commandName ?? '').replace(/Command$/, '');
        this.#record(operation, call);
        return next(args).catch((error: unknown) => {
          const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
          if (status === 404 && call.key !== undefined) this.#record(operation, { ...call, missing: true });
          throw error;
        });
      },
      { step: 'initialize', name: 'hopperAwsCallRecorder', override: true },
    );
  }

  /** `bus`, its events recorded as PutEvents. */
  eventBus(bus: RunEventBus): RunEventBus {
    return {
      put: (event) => {
        this.#record('PutEvents', { detailType: event.detailType });
        return bus.put(event);
      },
    };
  }

  /** `starter`, its starts recorded as StartExecution. */
  starter(starter: ExecutionStarter): ExecutionStarter {
    return {
      start: (name, input) => {
        this.#record('StartExecution', {});
        return starter.start(name, input);
      },
    };
  }

  /** Every kind of call recorded so far, in a stable order. */
  calls(): AwsCall[] {
    return [...this.#calls.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, call]) => call);
  }

  #record(operation: string, params: Omit<AwsCall, 'function' | 'operation'>): void {
    const name = current.getStore();
    if (name === undefined) return;
    const call = JSON.parse(JSON.stringify({ function: name, operation, ...params })) as AwsCall;
    this.#calls.set(JSON.stringify(call), call);
  }
}

/**
 * `status/reviews.json` -> `status/*`; the probe records keep their folder (`status/.doctor/*`),
 * the only part of the bucket the trigger may write.
 */
function areaOf(key: unknown): string | undefined {
  if (typeof key !== 'string') return undefined;
  if (key.startsWith(DOCTOR_SEEN_PREFIX)) return `${DOCTOR_SEEN_PREFIX}*`;
  return `${key.split('/')[0] ?? ''}/*`;
}
