/**
 * Handler kills, for fault tests: an invocation ends the way Lambda ends one whose process dies
 * (`Sandbox.Timedout`, or a runtime crash `Runtime.ExitError`) right after one of its requests
 * had its side effect, before the handler sees the answer. Nothing in the steps knows: the
 * requests are watched where they leave the process, in the service client's undici dispatcher
 * (the API and the presigned file URLs) and in a middleware of the shared S3 client, and each is
 * tied to the invocation that sent it through the async context (as lambdas/runtime/s3-requests.ts
 * ties S3 requests to their meter).
 *
 * A killed invocation is frozen as a dead process is: the answer that killed it never reaches
 * the handler, and any request it still tries is held and never sent, so the abandoned handler
 * has no further effect (no status write, no second label). close() fails the held requests so
 * the abandoned promises settle.
 *
 *   const kills = new HandlerKills({ rules: [{ task: 'StartTraining', death: 'Runtime.ExitError',
 *     after: (effect) => effect.kind === 'service' && effect.endpoint === 'POST /v1/datasets/{id}/models' }] });
 *   const local = await startLocalMode({ ...kills.modeOptions(), ... });
 *   kills.watchFunctions(local);
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { S3Client } from '@aws-sdk/client-s3';
import { Agent, type Dispatcher } from 'undici';
import { TASKS, type TaskName } from '../../infra/tasks.js';
import { LAMBDA_CLIENT_OPTIONS } from '../../lambdas/runtime/index.js';
import { mulberry32, type Random } from '../../local/service/domain/index.js';
import { LAMBDA_CRASH_ERROR, LAMBDA_TIMEOUT_ERROR } from '../../lambdas/core/errors/index.js';
import { LambdaInvocationError } from '../../local/emulator/lambda-invoke.js';
import type { LocalModeOptions, LocalTask } from '../../local/emulator/local-mode.js';

export { LAMBDA_CRASH_ERROR };

/** How an invocation dies, as Step Functions sees it. */
export type LambdaDeath = typeof LAMBDA_TIMEOUT_ERROR | typeof LAMBDA_CRASH_ERROR;

export const LAMBDA_DEATHS: readonly LambdaDeath[] = [LAMBDA_TIMEOUT_ERROR, LAMBDA_CRASH_ERROR];

/** A request an invocation sent, once its answer has arrived (its side effect done). */
export type SideEffect =
  | {
      readonly kind: 'service';
      readonly method: string;
      /**
       * The path with ids replaced by `{id}` and no query: `POST /v1/datasets/{id}/models`;
       * the simulated service's presigned file URLs are `PUT /upload/{id}/{id}` and
       * `GET /download/{id}`.
       */
      readonly endpoint: string;
      readonly status: number;
    }
  | {
      readonly kind: 's3';
      /** The SDK command's name: `PutObjectCommand`, `CompleteMultipartUploadCommand`, ... */
      readonly command: string;
      readonly key: string | undefined;
    };

/** Kill one invocation of `task` after the first side effect `after` accepts. */
export interface KillRule {
  readonly task: TaskName;
  readonly after: (effect: SideEffect) => boolean;
  readonly death: LambdaDeath;
  /** How many invocations this rule kills (each at its first matching effect). Default 1. */
  readonly times?: number;
}

/** Kills drawn at random: after any side effect of any Task, with probability `rate`. */
export interface RandomKills {
  readonly rate: number;
  readonly seed: number;
  /** Which deaths to draw from. Default both. */
  readonly deaths?: readonly LambdaDeath[];
}

export interface HandlerKillsOptions {
  readonly rules?: readonly KillRule[];
  readonly random?: RandomKills;
}

/** One invocation killed. */
export interface Kill {
  readonly runId: string;
  readonly task: TaskName;
  readonly death: LambdaDeath;
  readonly effect: SideEffect;
}

interface Invocation {
  readonly runId: string;
  readonly task: TaskName;
  /** The invocation that follows a killed one of the same Task and run: never killed (see below). */
  readonly spared: boolean;
  dead: boolean;
  die(error: LambdaInvocationError): void;
}

const currentInvocation = new AsyncLocalStorage<Invocation>();

export class HandlerKills {
  /** Every invocation killed so far, in order. */
  readonly kills: Kill[] = [];
  readonly #rules: { rule: KillRule; left: number }[];
  readonly #random: { rate: number; draw: Random; deaths: readonly LambdaDeath[] } | undefined;
  /** The Task last killed in each run: its retry is spared, as two deaths in a row are another test. */
  readonly #lastKilled = new Map<string, TaskName>();
  /** Requests of dead invocations, never sent: failed on close(). */
  readonly #held = new Set<(error: Error) => void>();
  readonly #agent = new Agent({ keepAliveTimeout: 10_000, keepAliveMaxTimeout: 60_000 });
  readonly #dispatcher: Dispatcher;
  #closed = false;

  constructor(options: HandlerKillsOptions) {
    this.#rules = (options.rules ?? []).map((rule) => ({ rule, left: rule.times ?? 1 }));
    const { random } = options;
    if (random !== undefined) {
      if (!(random.rate >= 0 && random.rate <= 1)) throw new RangeError('random.rate must be in 0..1');
      this.#random = {
        rate: random.rate,
        draw: mulberry32(random.seed),
        deaths: random.deaths ?? LAMBDA_DEATHS,
      };
    }
    this.#dispatcher = this.#agent.compose(
      (dispatch) => (options, handler) => this.#dispatch(dispatch, options, handler),
    );
  }

  /**
   * What startLocalMode needs: every Task wrapped, and the service client's requests sent
   * through the watching dispatcher (with Lambda's client options otherwise).
   */
  modeOptions(clientOptions: LocalModeOptions['clientOptions'] = LAMBDA_CLIENT_OPTIONS): LocalModeOptions {
    return {
      wrapTask: (name, task) => this.wrapTask(name, task),
      clientOptions: { ...clientOptions, dispatcher: this.#dispatcher },
    };
  }

  /** Watches every function's S3 client in `local` (each function has its own, as in Lambda). */
  watchFunctions(local: { functionS3(name: TaskName): S3Client | undefined }): void {
    for (const task of TASKS) {
      const client = local.functionS3(task.name);
      if (client !== undefined) this.watch(client);
    }
  }

  /** Watches the S3 requests the handlers send through `s3`. */
  watch(s3: S3Client): void {
    s3.middlewareStack.add(
      (next, context) => async (args) => {
        const invocation = currentInvocation.getStore();
        if (invocation === undefined) return next(args);
        if (invocation.dead) return this.#hold();
        const result = await next(args);
        const key = (args.input as { Key?: unknown }).Key;
        const effect: SideEffect = {
          kind: 's3',
          command: context.commandName ?? 'unknown',
          key: typeof key === 'string' ? key : undefined,
        };
        // Dead now: the answer is lost with the process.
        if (this.#afterEffect(invocation, effect)) return this.#hold();
        return result;
      },
      { step: 'initialize', name: 'hopperHandlerKills', override: true },
    );
  }

  /** `task` as a Lambda function that may die (LocalModeOptions.wrapTask). */
  wrapTask(name: TaskName, task: LocalTask): LocalTask {
    return (input) => {
      const runId = runIdOf(input);
      const spared = this.#lastKilled.get(runId) === name;
      this.#lastKilled.delete(runId);
      let die: (error: LambdaInvocationError) => void = () => undefined;
      const death = new Promise<never>((_, reject) => {
        die = reject;
      });
      const invocation: Invocation = { runId, task: name, spared, dead: false, die };
      const running = currentInvocation.run(invocation, () => task(input));
      // A killed invocation's handler is abandoned; whatever it does later is no one's error.
      running.catch(() => undefined);
      return Promise.race([running, death]);
    };
  }

  /** Fails every request a dead invocation held, so abandoned handlers settle; kills no more. */
  async close(): Promise<void> {
    this.#closed = true;
    const error = new Error('the invocation was killed (handler kills closed)');
    for (const release of this.#held) release(error);
    this.#held.clear();
    await this.#agent.close();
  }

  #dispatch(
    dispatch: Dispatcher['dispatch'],
    options: Dispatcher.DispatchOptions,
    handler: Dispatcher.DispatchHandler,
  ): boolean {
    const invocation = currentInvocation.getStore();
    if (invocation === undefined) return dispatch(options, handler);
    if (invocation.dead) {
      this.#holdDispatch(handler);
      return true;
    }
    const method = options.method;
    const endpoint = `${method} ${endpointOf(options.path)}`;
    return dispatch(
      options,
      new WithholdingHandler(
        handler,
        (status) => this.#afterEffect(invocation, { kind: 'service', method, endpoint, status }),
        (fail) => void this.#hold().catch(fail),
      ),
    );
  }

  /** Decides whether `effect` kills `invocation`; if so kills it and returns true. */
  #afterEffect(invocation: Invocation, effect: SideEffect): boolean {
    if (this.#closed || invocation.dead || invocation.spared) return false;
    const death = this.#deathFor(invocation, effect);
    if (death === undefined) return false;
    invocation.dead = true;
    this.#lastKilled.set(invocation.runId, invocation.task);
    this.kills.push({ runId: invocation.runId, task: invocation.task, death, effect });
    invocation.die(new LambdaInvocationError(death, deathMessage(death)));
    return true;
  }

  #deathFor(invocation: Invocation, effect: SideEffect): LambdaDeath | undefined {
    for (const entry of this.#rules) {
      if (entry.left > 0 && entry.rule.task === invocation.task && entry.rule.after(effect)) {
        entry.left -= 1;
        return entry.rule.death;
      }
    }
    const random = this.#random;
    if (random === undefined || random.draw() >= random.rate) return undefined;
    return random.deaths[Math.floor(random.draw() * random.deaths.length)] ?? LAMBDA_TIMEOUT_ERROR;
  }

  /** A request of a dead invocation: never sent, failed on close(). */
  #hold(): Promise<never> {
    return new Promise<never>((_, reject) => {
      if (this.#closed) reject(new Error('the invocation was killed'));
      else this.#held.add(reject);
    });
  }

  #holdDispatch(handler: Dispatcher.DispatchHandler): void {
    void this.#hold().catch((error: unknown) => {
      handler.onResponseError?.(ABORTED, error instanceof Error ? error : new Error(String(error)));
    });
  }
}

/**
 * The controller handed to a request failed without being sent (held, or tried by a dead
 * process): nothing left to control.
 */
export const ABORTED: Dispatcher.DispatchController = {
  aborted: true,
  paused: false,
  reason: null,
  abort: () => undefined,
  pause: () => undefined,
  resume: () => undefined,
};

/**
 * Passes everything through, except the end of an answer `withholds` accepts (by its status):
 * that end never arrives, nothing after it is passed on, and `withhold` decides when the request
 * fails instead: HandlerKills holds it until close(), the crash explorer fails it at once.
 */
export class WithholdingHandler implements Dispatcher.DispatchHandler {
  #status = 0;
  #frozen = false;

  constructor(
    private readonly inner: Dispatcher.DispatchHandler,
    private readonly withholds: (status: number) => boolean,
    /** Fails the withheld answer, now or later, by calling `fail` with an error. */
    private readonly withhold: (fail: (error: Error) => void) => void,
  ) {}

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    this.inner.onRequestStart?.(controller, context);
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseStart']>>[2],
    statusMessage?: string,
  ): void {
    this.#status = statusCode;
    this.inner.onResponseStart?.(controller, statusCode, headers, statusMessage);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.#frozen) this.inner.onResponseData?.(controller, chunk);
  }

  onResponseEnd(
    controller: Dispatcher.DispatchController,
    trailers: Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseEnd']>>[1],
  ): void {
    if (this.#frozen) return;
    if (this.withholds(this.#status)) {
      this.#frozen = true;
      // Failed in the end, so the abandoned handler settles and local mode closes at once.
      this.withhold((error) => this.inner.onResponseError?.(controller, error));
      return;
    }
    this.inner.onResponseEnd?.(controller, trailers);
  }

  onResponseError(controller: Dispatcher.DispatchController, error: Error): void {
    if (!this.#frozen) this.inner.onResponseError?.(controller, error);
  }
}

/** `/v1/datasets/<uuid>/files/<uuid>/complete?x=1` -> `/v1/datasets/{id}/files/{id}/complete`. */
export function endpointOf(path: string): string {
  const bare = path.split('?')[0] ?? '';
  return bare
    .split('/')
    .map((segment) => (segment === '' || NAMED_SEGMENTS.has(segment) ? segment : '{id}'))
    .join('/');
}

/** The fixed words of the service's paths (docs/service-contract.md, B2 to B8) and of its file URLs. */
const NAMED_SEGMENTS = new Set([
  'v1',
  'datasets',
  'models',
  'files',
  'complete',
  'structure',
  'suggest',
  'labels',
  'next',
  'download',
  'upload',
  'encoders',
]);

function deathMessage(death: LambdaDeath): string {
  return death === LAMBDA_TIMEOUT_ERROR
    ? 'Task timed out (killed by a fault test after its side effect)'
    : 'Runtime exited with error: signal: killed (a fault test killed it after its side effect)';
}

/** The run id of a Task's input (`$.run.runId`), or '' before the run has one. */
export function runIdOf(input: unknown): string {
  const runId = (input as { run?: { runId?: unknown } } | null)?.run?.runId;
  return typeof runId === 'string' ? runId : '';
}
