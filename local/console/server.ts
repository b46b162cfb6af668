/**
 * The local console: a web page and its JSON API on loopback, over what local mode already
 * has (the RunLog of this local mode's executions, the status files and models in the local
 * bucket, the simulated service). Everything the page loads comes from here: its own files and
 * the layout library's browser bundle from node_modules, nothing from the network.
 *
 *   GET  /                              the page (its scripts under /static/, /vendor/)
 *   GET  /api/overview                  bucket, endpoints, what this local mode runs
 *   GET  /api/definition                the ASL the state machine runs
 *   GET  /api/errors                    docs/errors.md's table, by code
 *   GET  /api/runs?offset&limit&state&drop   runs, newest first, paged
 *   GET  /api/runs/<run id>             one run: history, status file, model record
 *   GET  /api/download?key=models/...   a model file, as an attachment
 *   GET  /api/service                   the simulated service's datasets, models, credits
 *   GET  /api/events                    server-sent events: `runs` with the ids that changed
 *   POST /api/drops/check               { drop, files }: whether the folder can be a drop
 *   PUT  /api/drops/<drop>/files?name=  one file of a drop (the page sends train.json last)
 */
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { messageOf } from '../../lambdas/run/errors.js';
import type { LocalMode } from '../emulator/local-mode.js';
import { BucketView } from './bucket-view.js';
import { loadErrorAdvice, type ErrorAdvice } from './error-advice.js';
import { RunLog, type ConsoleRunState } from './run-log.js';
import { RUN_STATES, RunCatalogue } from './runs.js';
import { ServiceView } from './service-view.js';
import { checkDrop, putDropFile, UploadError } from './uploads.js';

export interface ConsoleOptions {
  /** Port on 127.0.0.1. Default: a free port. */
  readonly port?: number;
  /** Shown on the page: where the bucket is kept (`--data-dir`). */
  readonly dataDir?: string;
  /**
   * The key of a training service given by `--service-url`, checked for in every answer like
   * the simulated service's own (which the console knows already).
   */
  readonly apiKey?: string;
}

export interface LocalConsole {
  /** `http://127.0.0.1:<port>/` */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/** Runs per page when the page asks for no other number, and the most it may ask for. */
const DEFAULT_PAGE = 50;
const MAX_PAGE = 200;
/** Changes are sent at most this often, gathered (a run emits dozens of events a second). */
const EVENT_FLUSH_MS = 150;
/** A comment line keeps idle event streams open through proxies and tells the page it lives. */
const HEARTBEAT_MS = 15_000;

const PAGE_DIR = new URL('./page/', import.meta.url);
const STATIC_FILES: Readonly<Record<string, { readonly file: URL | string; readonly type: string }>> = {
  '/': { file: new URL('index.html', PAGE_DIR), type: 'text/html; charset=utf-8' },
  '/static/console.js': { file: new URL('console.js', PAGE_DIR), type: 'text/javascript; charset=utf-8' },
  '/static/graph.js': { file: new URL('graph.js', PAGE_DIR), type: 'text/javascript; charset=utf-8' },
  '/static/console.css': { file: new URL('console.css', PAGE_DIR), type: 'text/css; charset=utf-8' },
  '/vendor/dagre.min.js': { file: dagreBundle(), type: 'text/javascript; charset=utf-8' },
};

export async function startConsole(local: LocalMode, options: ConsoleOptions = {}): Promise<LocalConsole> {
  const log = new RunLog(local.stateMachine);
  const bucket = new BucketView(local.s3.client, local.bucket);
  const runs = new RunCatalogue(log, bucket);
  const service = local.simulated === undefined ? undefined : new ServiceView(local.simulated);
  const advice = await loadErrorAdvice();
  // The state never holds the key; every JSON answer is checked anyway before it leaves.
  const secret = options.apiKey ?? local.simulated?.apiKey ?? '';
  const streams = new EventStreams(log);

  const context: RouteContext = { local, runs, bucket, service, advice, secret, streams, options };
  const server = createServer((request, response) => {
    handle(context, request, response).catch((error: unknown) => {
      if (!response.headersSent) sendJson(response, 500, { error: messageOf(error) }, secret);
      else response.destroy();
    });
  });
  const port = await listen(server, options.port ?? 0);
  context.origins = [`http://127.0.0.1:${String(port)}`, `http://localhost:${String(port)}`];
  return {
    url: `http://127.0.0.1:${String(port)}/`,
    port,
    async close() {
      streams.close();
      log.close();
      await new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
        server.closeAllConnections();
      });
      await service?.close();
    },
  };
}

interface RouteContext {
  readonly local: LocalMode;
  readonly runs: RunCatalogue;
  readonly bucket: BucketView;
  readonly service: ServiceView | undefined;
  readonly advice: ReadonlyMap<string, ErrorAdvice>;
  readonly secret: string;
  readonly streams: EventStreams;
  readonly options: ConsoleOptions;
  origins?: readonly string[];
}

async function handle(
  context: RouteContext,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const { secret } = context;
  const url = new URL(request.url ?? '/', 'http://127.0.0.1');
  // Only pages of this console may call it: a page elsewhere (or a DNS-rebound name) may not.
  const origins = context.origins ?? [];
  const host = `http://${request.headers.host ?? ''}`;
  const origin = request.headers.origin;
  if (!origins.includes(host) || (origin !== undefined && !origins.includes(origin))) {
    sendJson(response, 403, { error: 'the console answers pages it serves on 127.0.0.1 only' }, secret);
    return;
  }
  const path = url.pathname;
  const method = request.method ?? 'GET';

  if (method === 'GET') {
    const file = STATIC_FILES[path];
    if (file !== undefined) {
      const body = await readFile(file.file);
      response.writeHead(200, { 'content-type': file.type, 'cache-control': 'no-cache' });
      response.end(body);
      return;
    }
    if (path === '/api/overview') {
      sendJson(response, 200, overview(context), secret);
      return;
    }
    if (path === '/api/definition') {
      sendJson(response, 200, context.local.definition, secret);
      return;
    }
    if (path === '/api/errors') {
      sendJson(response, 200, Object.fromEntries(context.advice), secret);
      return;
    }
    if (path === '/api/runs') {
      const state = url.searchParams.get('state') ?? '';
      const drop = url.searchParams.get('drop');
      const page = await context.runs.page({
        ...(drop === null ? {} : { drop }),
        offset: integerParam(url, 'offset', 0, 0, Number.MAX_SAFE_INTEGER),
        limit: integerParam(url, 'limit', DEFAULT_PAGE, 1, MAX_PAGE),
        ...((RUN_STATES as readonly string[]).includes(state) ? { state: state as ConsoleRunState } : {}),
      });
      sendJson(response, 200, page, secret);
      return;
    }
    const runMatch = /^\/api\/runs\/([^/]+)$/.exec(path);
    if (runMatch !== null) {
      const detail = await context.runs.detail(decodeURIComponent(runMatch[1] ?? ''));
      if (detail === null) {
        sendJson(response, 404, { error: 'no such run' }, secret);
        return;
      }
      const record =
        detail.model === null
          ? null
          : await context.bucket.modelRecord(detail.summary.drop, detail.model.modelId);
      const code = detail.summary.error?.code;
      sendJson(
        response,
        200,
        { ...detail, record, advice: code === undefined ? null : (context.advice.get(code) ?? null) },
        secret,
      );
      return;
    }
    if (path === '/api/download') {
      await download(context, url.searchParams.get('key') ?? '', response);
      return;
    }
    if (path === '/api/service') {
      if (context.service === undefined) {
        sendJson(
          response,
          404,
          { error: 'local mode is using another training service (--service-url)' },
          secret,
        );
        return;
      }
      sendJson(response, 200, await context.service.snapshot(), secret);
      return;
    }
    if (path === '/api/events') {
      context.streams.add(response);
      return;
    }
  }
  if (method === 'POST' && path === '/api/drops/check') {
    const body = await readJson(request);
    const drop = typeof body.drop === 'string' ? body.drop : '';
    const files = Array.isArray(body.files) ? body.files.filter((name) => typeof name === 'string') : [];
    try {
      checkDrop(drop, files);
    } catch (error) {
      if (!(error instanceof UploadError)) throw error;
      sendJson(response, 400, { error: error.message }, secret);
      return;
    }
    sendJson(
      response,
      200,
      { drop, files: files.length, prefix: `s3://${context.local.bucket}/inbox/${drop}/` },
      secret,
    );
    return;
  }
  const putMatch = /^\/api\/drops\/([^/]+)\/files$/.exec(path);
  if (method === 'PUT' && putMatch !== null) {
    try {
      const drop = decodeURIComponent(putMatch[1] ?? '');
      const etag = await putDropFile(
        context.local.s3.client,
        context.local.bucket,
        drop,
        url.searchParams.get('name') ?? '',
        request,
      );
      sendJson(response, 200, { etag }, secret);
    } catch (error) {
      if (!(error instanceof UploadError)) throw error;
      sendJson(response, 400, { error: error.message }, secret);
    }
    return;
  }
  sendJson(response, 404, { error: `no ${method} ${path} here` }, secret);
}

function overview(context: RouteContext): Record<string, unknown> {
  const { local, options } = context;
  return {
    bucket: local.bucket,
    s3Endpoint: local.s3.endpoint,
    serviceUrl: local.serviceUrl,
    simulated: local.simulated !== undefined,
    dataDir: options.dataDir ?? null,
    interrupted: local.interrupted,
  };
}

async function download(context: RouteContext, key: string, response: ServerResponse): Promise<void> {
  const file = await context.bucket.modelFile(key);
  if (file === null) {
    sendJson(response, 404, { error: `no model file ${key}` }, context.secret);
    return;
  }
  const name = key.split('/').at(-1) ?? 'model';
  response.writeHead(200, {
    'content-type': name.endsWith('.json') ? 'application/json' : 'application/octet-stream',
    'content-length': String(file.bytes),
    'content-disposition': `attachment; filename="${name}"`,
  });
  await pipeline(file.body, response);
}

/** The body as a JSON object (small bodies only: the drop check's list of names). */
async function readJson(request: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (bytes > 1_000_000) throw new UploadError('the list of files is too long (over 1 MB)');
    chunks.push(chunk);
  }
  try {
    const parsed: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function sendJson(response: ServerResponse, status: number, body: unknown, secret: string): void {
  let text = JSON.stringify(body);
  let code = status;
  if (secret !== '' && text.includes(secret)) {
    // Never expected (the state holds no key); if it ever happens the answer is withheld.
    code = 500;
    text = JSON.stringify({ error: 'this answer was withheld: it would have contained the API key' });
  }
  response.writeHead(code, {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
  });
  response.end(text);
}

function integerParam(url: URL, name: string, fallback: number, min: number, max: number): number {
  const text = url.searchParams.get(name);
  const value = text === null || !/^\d{1,15}$/.test(text) ? fallback : Number(text);
  return Math.min(max, Math.max(min, value));
}

/** The page's live updates: each open stream hears which runs changed, gathered per flush. */
class EventStreams {
  readonly #responses = new Set<ServerResponse>();
  readonly #changed = new Set<string>();
  readonly #log: RunLog;
  #flush: NodeJS.Timeout | undefined;
  readonly #heartbeat: NodeJS.Timeout;

  constructor(log: RunLog) {
    this.#log = log;
    log.on('change', (runId) => {
      this.#changed.add(runId);
      this.#flush ??= setTimeout(() => {
        this.#send();
      }, EVENT_FLUSH_MS);
    });
    this.#heartbeat = setInterval(() => {
      for (const response of this.#responses) response.write(': alive\n\n');
    }, HEARTBEAT_MS);
    this.#heartbeat.unref();
  }

  add(response: ServerResponse): void {
    response.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-store',
      connection: 'keep-alive',
    });
    response.write('retry: 1000\n\n');
    this.#responses.add(response);
    response.on('close', () => this.#responses.delete(response));
  }

  #send(): void {
    this.#flush = undefined;
    const data = JSON.stringify({ runIds: [...this.#changed] });
    this.#changed.clear();
    for (const response of this.#responses) response.write(`event: runs\ndata: ${data}\n\n`);
  }

  close(): void {
    clearTimeout(this.#flush);
    clearInterval(this.#heartbeat);
    this.#log.removeAllListeners('change');
    for (const response of this.#responses) response.end();
    this.#responses.clear();
  }
}

function listen(server: Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      const why = error.code === 'EADDRINUSE' ? 'is in use' : `cannot be used (${error.message})`;
      reject(
        new Error(
          `the console's port ${String(port)} on 127.0.0.1 ${why}: choose another (--console-port), or leave it out for a free one`,
        ),
      );
    });
    server.listen(port, '127.0.0.1', () => {
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** dagre's browser bundle (a global `dagre`), from the installed package. */
function dagreBundle(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('@dagrejs/dagre')), 'dagre.min.js');
}
