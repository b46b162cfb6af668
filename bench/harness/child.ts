/**
 * A benchmark's child process (started by processes.ts):
 *   child.ts server <s3|service> <options JSON>   serves until SIGTERM, answers requests over IPC
 *   child.ts client                               runs one ClientCall, sends its result, exits
 */
import type {
  ClientCall,
  ClientFunction,
  Measure,
  Measurement,
  ServerInfo,
  ServerKind,
  ServerRequest,
} from './protocol.js';

const MEMORY_SAMPLE_MS = 25;

function send(message: unknown): Promise<void> {
  return new Promise((resolve, reject) => {
    if (process.send === undefined) {
      reject(new Error('bench/harness/child.ts runs only as a child of the benchmark runner'));
      return;
    }
    process.send(message, (error: Error | null) => {
      if (error === null) resolve();
      else reject(error);
    });
  });
}

function cpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

/** Wall time, CPU time and peak RSS growth of `work`. */
export const measure: Measure = async (work) => {
  const rssBefore = process.memoryUsage.rss();
  let peak = rssBefore;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, MEMORY_SAMPLE_MS);
  const cpuBefore = cpuMs();
  const started = performance.now();
  try {
    const result = await work();
    const measurement: Measurement = {
      wallMs: performance.now() - started,
      cpuMs: cpuMs() - cpuBefore,
      rssGrowth: Math.max(peak, process.memoryUsage.rss()) - rssBefore,
    };
    return { result, measurement };
  } finally {
    clearInterval(sampler);
  }
};

async function serve(kind: ServerKind, options: Record<string, unknown>): Promise<void> {
  let info: ServerInfo[ServerKind];
  let answer: (request: ServerRequest) => unknown;
  let close: () => Promise<void>;
  if (kind === 's3') {
    const { startLocalS3 } = await import('../../local/s3/local-s3.js');
    const s3 = await startLocalS3();
    info = { endpoint: s3.endpoint, bucket: s3.bucket };
    close = () => s3.close();
    answer = (request) => {
      if (request.op === 'cpu') return cpuMs();
      throw new Error(`the s3 server has no request ${request.op}`);
    };
  } else {
    const { startSimulatedService } = await import('../../local/service/index.js');
    const service = await startSimulatedService(options);
    info = { apiUrl: service.apiUrl, fileUrl: service.fileUrl, apiKey: service.apiKey };
    close = () => service.close();
    answer = (request) => {
      switch (request.op) {
        case 'cpu':
          return cpuMs();
        case 'configure':
          service.configure(request.changes);
          return null;
        case 'requestCount':
          return service.requestCount(request.endpoint as Parameters<typeof service.requestCount>[0]);
        case 'rateLimited':
          return service.rateLimited();
        case 'credits':
          return service.credits();
        case 'maxConcurrentUploads':
          return service.uploadsInFlight(request.reset).max;
      }
    };
  }
  process.on('message', (request: ServerRequest) => {
    let reply: unknown;
    try {
      reply = { value: answer(request) };
    } catch (error) {
      reply = { error: error instanceof Error ? error.message : String(error) };
    }
    void send(reply);
  });
  process.once('SIGTERM', () => {
    void close().finally(() => process.exit(0));
  });
  await send(info);
}

async function runClient(): Promise<void> {
  const call = await new Promise<ClientCall>((resolve) => process.once('message', resolve));
  try {
    const module = (await import(new URL(`../${call.module}`, import.meta.url).href)) as Record<
      string,
      unknown
    >;
    const run = module[call.export];
    if (typeof run !== 'function') throw new Error(`bench/${call.module} exports no function ${call.export}`);
    const result = await (run as ClientFunction)(call.args, measure);
    await send(result);
  } catch (error) {
    await send({ error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  }
  process.disconnect();
  // Open sockets or timers of the client must not keep a finished run alive.
  process.exit(0);
}

const [role, kind, options] = process.argv.slice(2);
if (role === 'server') {
  await serve(kind as ServerKind, JSON.parse(options ?? '{}') as Record<string, unknown>);
} else if (role === 'client') {
  await runClient();
} else {
  throw new Error(`bench/harness/child.ts: unknown role ${String(role)}`);
}
