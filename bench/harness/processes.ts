/**
 * The processes of a benchmark: servers (the local S3, the simulated service) each in a child
 * process of their own, and every measured client in a fresh child process, so that a figure
 * holds neither a server's work nor what an earlier run left in the heap or the JIT.
 * Parent and child talk over Node's IPC channel (bench/harness/child.ts is the other side).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Endpoints } from '../clients/setup.js';
import type { ClientCall, ClientResult, ServerInfo, ServerKind, ServerRequest } from './protocol.js';

const CHILD = fileURLToPath(new URL('./child.ts', import.meta.url));
/** A child that neither answers nor exits within this is killed and the benchmark fails. */
const CHILD_TIMEOUT_MS = 5 * 60_000;

function spawnChild(args: readonly string[], execArgv: readonly string[] = []): ChildProcess {
  return fork(CHILD, [...args], {
    execArgv: ['--import', 'tsx', ...execArgv],
    env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}

/** The next message of `child`, or a clear error when it exits or takes too long. */
function nextMessage<T>(child: ChildProcess, what: string, timeoutMs = CHILD_TIMEOUT_MS): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      child.kill('SIGKILL');
      reject(new Error(`${what}: no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    const onMessage = (message: unknown) => {
      cleanup();
      const failure = (message as { error?: string }).error;
      if (failure !== undefined) reject(new Error(`${what}: ${failure}`));
      else resolve(message as T);
    };
    const onExit = (code: number | null, signal: string | null) => {
      cleanup();
      reject(new Error(`${what}: the process exited (${signal ?? String(code)}) before answering`));
    };
    const cleanup = () => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    child.on('message', onMessage);
    child.on('exit', onExit);
  });
}

export interface ServerProcess<K extends ServerKind> {
  readonly info: ServerInfo[K];
  /** CPU time (user + system) the server process has used so far, in ms. */
  cpuMs(): Promise<number>;
  /** Sends a request the server child understands (configure knobs, read counters). */
  request<T = unknown>(request: ServerRequest): Promise<T>;
  close(): Promise<void>;
}

/** Starts a server in its own process; `options` go to its start function. */
export async function startServer<K extends ServerKind>(
  kind: K,
  options: Record<string, unknown> = {},
): Promise<ServerProcess<K>> {
  const child = spawnChild(
    ['server', kind, JSON.stringify(options)],
    process.env.BENCH_SERVER_NODE_FLAGS?.split(' ').filter(Boolean) ?? [],
  );
  const info = await nextMessage<ServerInfo[K]>(child, `the ${kind} server`);
  // One request at a time: answers come back in order.
  let queue: Promise<unknown> = Promise.resolve();
  const request = <T>(message: ServerRequest): Promise<T> => {
    const answer = queue.then(() => {
      const reply = nextMessage<{ value: T }>(child, `the ${kind} server (${message.op})`);
      child.send(message);
      return reply;
    });
    queue = answer.catch(() => undefined);
    return answer.then((reply) => reply.value);
  };
  return {
    info,
    request,
    cpuMs: () => request<number>({ op: 'cpu' }),
    async close() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The local S3 and the simulated service (with `serviceOptions`), and where a client finds them. */
export interface Servers {
  readonly s3: ServerProcess<'s3'>;
  readonly service: ServerProcess<'service'>;
  readonly endpoints: Endpoints;
  close(): Promise<void>;
}

export async function startServers(serviceOptions: Record<string, unknown>): Promise<Servers> {
  const s3 = await startServer('s3');
  const service = await startServer('service', serviceOptions);
  return {
    s3,
    service,
    endpoints: {
      s3Endpoint: s3.info.endpoint,
      bucket: s3.info.bucket,
      apiUrl: service.info.apiUrl,
      apiKey: service.info.apiKey,
    },
    close: async () => {
      await Promise.all([s3.close(), service.close()]);
    },
  };
}

/**
 * Runs `call` in a fresh process and returns what it measured. `execArgv` adds Node flags
 * (e.g. `--cpu-prof` when looking for where the time goes); `timeoutMs` bounds a client that
 * runs longer than CHILD_TIMEOUT_MS by design.
 */
export async function runClient<R extends ClientResult>(
  call: ClientCall,
  execArgv: readonly string[] = [],
  timeoutMs = CHILD_TIMEOUT_MS,
): Promise<R> {
  const child = spawnChild(
    ['client'],
    [...execArgv, ...(process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? [])],
  );
  const answer = nextMessage<R>(child, `client ${call.module}#${call.export}`, timeoutMs);
  child.send(call);
  const result = await answer;
  await new Promise((resolve) => {
    if (child.exitCode !== null) resolve(undefined);
    else child.once('exit', resolve);
  });
  return result;
}
