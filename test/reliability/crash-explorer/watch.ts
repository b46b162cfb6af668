/**
 * Every side effect of one local mode, in order, and the process's death at one of them. The
 * requests are watched where they leave the process, as test/helpers/handler-kills.ts watches
 * them (the service client's undici dispatcher, a middleware of each function's S3 client) and
 * tied to their invocation through the async context. Unlike HandlerKills, which kills one
 * invocation and lets the state machine retry it, a death here is the whole `hopper local`
 * process's: the answer of the request it dies at is lost, and from then on no invocation of any
 * run sends anything, nor does any Task return to the interpreter. The caller then closes local
 * mode and starts another on the same data directory, which finds what a restart after kill -9
 * would: the bucket and the service as the last request left them.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { S3Client } from '@aws-sdk/client-s3';
import { Agent, type Dispatcher } from 'undici';
import { TASKS, type TaskName } from '../../../infra/tasks.js';
import { LAMBDA_CLIENT_OPTIONS } from '../../../lambdas/runtime/index.js';
import type { LocalModeOptions, LocalTask } from '../../../local/emulator/local-mode.js';
import { ABORTED, endpointOf, runIdOf, WithholdingHandler } from '../../helpers/handler-kills.js';

/** The S3 commands that change the bucket: every other S3 request only reads. */
const S3_WRITES = new Set([
  'PutObjectCommand',
  'CopyObjectCommand',
  'DeleteObjectCommand',
  'DeleteObjectsCommand',
  'CreateMultipartUploadCommand',
  'UploadPartCommand',
  'CompleteMultipartUploadCommand',
  'AbortMultipartUploadCommand',
]);

/** One request an invocation sent that may change something: an S3 write or a service request. */
export interface Effect {
  /** Its place among all the effects of this local mode, from 0. */
  readonly seq: number;
  readonly runId: string;
  /** 1 for the first run this local mode started, 2 for the next (a redrop's), ... */
  readonly run: number;
  readonly task: TaskName;
  /** Which invocation of `task` in its run sent it, from 1 (polls run many times). */
  readonly invocation: number;
  readonly kind: 'service' | 's3';
  /** `POST /v1/datasets`, `PUT /upload/{id}/{id}`, `PutObject status/<drop>.json`, ... */
  readonly request: string;
  /** Its place among the requests of the same `request` in its invocation, from 1. */
  readonly ordinal: number;
}

/** Where an effect is, independent of ids and timing: the same point in every run of a drop. */
export function pointOf(effect: Pick<Effect, 'task' | 'invocation' | 'request' | 'ordinal'>): string {
  return `${effect.task}#${String(effect.invocation)} ${effect.request}#${String(effect.ordinal)}`;
}

export interface WatchHooks {
  /** Before `effect` is sent (its request waits for it): a redrop, a fault rule put in place. */
  before?(effect: Effect): Promise<void>;
  /** Once `effect` was answered: true kills the process there, its answer lost. */
  killAfter?(effect: Effect): boolean;
  /** Before `effect` is sent: true kills the process there, the request never sent. */
  killBefore?(effect: Effect): boolean;
}

interface Invocation {
  readonly runId: string;
  readonly run: number;
  readonly task: TaskName;
  readonly invocation: number;
  readonly sent: Map<string, number>;
}

const current = new AsyncLocalStorage<Invocation>();

/** A request tried after the process died: never sent. */
class ProcessDead extends Error {
  constructor() {
    super('the process was killed (crash explorer)');
    this.name = 'ProcessDead';
  }
}

export class SideEffectWatch {
  /** Every effect sent so far, in order. */
  readonly effects: Effect[] = [];
  /** When each Task invocation started, by run and task: `1 StartTraining` -> effects before it. */
  readonly invocationStarts: { run: number; task: TaskName; atEffect: number }[] = [];
  /** The effect the process died after, once it has. */
  killedAt: Effect | undefined;
  readonly #runs = new Map<string, number>();
  readonly #invocations = new Map<string, number>();
  readonly #agent = new Agent({ keepAliveTimeout: 10_000, keepAliveMaxTimeout: 60_000 });
  readonly #dispatcher: Dispatcher;
  readonly #died: Promise<Effect>;
  #die: (effect: Effect) => void = () => undefined;

  constructor(private readonly hooks: WatchHooks = {}) {
    this.#dispatcher = this.#agent.compose(
      (dispatch) => (options, handler) => this.#dispatch(dispatch, options, handler),
    );
    this.#died = new Promise((resolve) => {
      this.#die = resolve;
    });
  }

  /** Resolves with the effect the process died after. */
  get died(): Promise<Effect> {
    return this.#died;
  }

  /** What startLocalMode needs: every Task wrapped, the service client's requests watched. */
  modeOptions(): Pick<LocalModeOptions, 'wrapTask' | 'clientOptions'> {
    return {
      wrapTask: (name, task) => this.#wrapTask(name, task),
      clientOptions: { ...LAMBDA_CLIENT_OPTIONS, dispatcher: this.#dispatcher },
    };
  }

  /** Watches every function's S3 client of `local`. */
  watchFunctions(local: { functionS3(name: TaskName): S3Client | undefined }): void {
    for (const task of TASKS) {
      const client = local.functionS3(task.name);
      if (client !== undefined) this.#watchS3(client);
    }
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }

  #wrapTask(name: TaskName, task: LocalTask): LocalTask {
    return async (input) => {
      // A dead process's interpreter calls nothing more, and hears back from nothing.
      if (this.killedAt !== undefined) return never();
      const runId = runIdOf(input);
      const run = this.#runs.get(runId) ?? this.#runs.size + 1;
      this.#runs.set(runId, run);
      const key = `${runId} ${name}`;
      const invocation = (this.#invocations.get(key) ?? 0) + 1;
      this.#invocations.set(key, invocation);
      this.invocationStarts.push({ run, task: name, atEffect: this.effects.length });
      const state: Invocation = { runId, run, task: name, invocation, sent: new Map() };
      const settled = await current
        .run(state, () => task(input))
        .then(
          (value) => ({ value }),
          (error: unknown) => ({ error }),
        );
      if (this.#dead()) return never();
      if ('error' in settled) throw settled.error;
      return settled.value;
    };
  }

  /** The effect `request` of the current invocation, numbered; undefined outside an invocation. */
  #effectOf(kind: Effect['kind'], request: string): Effect | undefined {
    const invocation = current.getStore();
    if (invocation === undefined) return undefined;
    const ordinal = (invocation.sent.get(request) ?? 0) + 1;
    invocation.sent.set(request, ordinal);
    const effect: Effect = {
      seq: this.effects.length,
      runId: invocation.runId,
      run: invocation.run,
      task: invocation.task,
      invocation: invocation.invocation,
      kind,
      request,
      ordinal,
    };
    this.effects.push(effect);
    return effect;
  }

  /** True when the process dies after `effect`: its answer is then lost. */
  #diesAfter(effect: Effect): boolean {
    if (this.killedAt !== undefined) return true;
    if (this.hooks.killAfter?.(effect) !== true) return false;
    this.#kill(effect);
    return true;
  }

  /** Runs the `before` hook; true when the process is dead (then `effect` is not sent). */
  async #diesBefore(effect: Effect): Promise<boolean> {
    if (this.killedAt === undefined && this.hooks.killBefore?.(effect) === true) this.#kill(effect);
    if (this.killedAt === undefined) await this.hooks.before?.(effect);
    return this.killedAt !== undefined;
  }

  /** Read through a method: the type checker would keep its narrowing across an await. */
  #dead(): boolean {
    return this.killedAt !== undefined;
  }

  #kill(effect: Effect): void {
    this.killedAt = effect;
    this.#die(effect);
  }

  #watchS3(s3: S3Client): void {
    s3.middlewareStack.add(
      (next, context) => async (args) => {
        if (current.getStore() === undefined) return next(args);
        if (this.killedAt !== undefined) throw new ProcessDead();
        const command = context.commandName ?? 'unknown';
        if (!S3_WRITES.has(command)) return next(args);
        const key = (args.input as { Key?: unknown }).Key;
        const runId = current.getStore()?.runId ?? '';
        const request = `${command.replace(/Command$/, '')} ${keyPattern(typeof key === 'string' ? key : '', runId)}`;
        const effect = this.#effectOf('s3', request);
        if (effect !== undefined && (await this.#diesBefore(effect))) throw new ProcessDead();
        const result = await next(args);
        if (effect !== undefined && this.#diesAfter(effect)) throw new ProcessDead();
        return result;
      },
      { step: 'initialize', name: 'crashExplorerWatch', override: true },
    );
  }

  #dispatch(
    dispatch: Dispatcher['dispatch'],
    options: Dispatcher.DispatchOptions,
    handler: Dispatcher.DispatchHandler,
  ): boolean {
    if (current.getStore() === undefined) return dispatch(options, handler);
    const fail = (): boolean => {
      queueMicrotask(() => handler.onResponseError?.(ABORTED, new ProcessDead()));
      return true;
    };
    if (this.killedAt !== undefined) return fail();
    const effect = this.#effectOf('service', `${options.method} ${endpointOf(options.path)}`);
    if (effect === undefined) return dispatch(options, handler);
    const losing = new WithholdingHandler(
      handler,
      () => this.#diesAfter(effect),
      // The answer is lost with the process: the request fails at once.
      (lose) => {
        lose(new ProcessDead());
      },
    );
    void this.#diesBefore(effect).then((dead) => (dead ? fail() : dispatch(options, losing)), fail);
    return true;
  }
}

/** `status/.runs/<drop>/<run id>.json` with the run's id and any uuid made generic. */
function keyPattern(key: string, runId: string): string {
  const generic = runId === '' ? key : key.split(runId).join('{run}');
  return generic.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '{id}');
}

function never(): Promise<never> {
  return new Promise<never>(() => undefined);
}
