/**
 * The local console: a web page and its JSON API on loopback, over what local mode already
 * has (the RunLog of this local mode's executions, the status files and models in the local
 * bucket, the simulated service). Everything the page loads comes from here: its own files and
 * the layout library's browser bundle from node_modules, nothing from the network.
 *
 *   GET  /                              the page, with the current state in it (its scripts under
 *                                       /static/, /vendor/)
 *   GET  /api/overview                  bucket, endpoints, what this local mode runs
 *   GET  /api/runs?offset&limit&state&drop   runs, newest first, paged
 *   GET  /api/runs/<run id>             one run: history, status file, model record
 *   GET  /api/download?key=models/...   a model file, as an attachment
 *   GET  /api/service                   the simulated service's datasets, models, credits
 *   GET  /api/events                    server-sent events: `runs` with the ids that changed
 *   POST /api/drops/check               { drop, files: [{ name, bytes }], trainJson: [bytes] }: whether
 *                                       the folder can be a drop, by the run's rules (uploads.ts)
 *   PUT  /api/drops/<drop>/files?name=  one file of a drop (the page sends train.json last)
 */
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { CONSOLE_PAGE, ERRORS_DOC } from '../files.js';
import { messageOf } from '../../lambdas/core/errors/index.js';
import { LISTED_RUN_STATES, type ListedRunState } from '../../lambdas/core/state/index.js';
import type { LocalMode } from '../emulator/local-mode.js';
import { listen as listenOn, stop } from '../service/http/index.js';
import { BucketView } from './bucket-view.js';
import { RunLog } from './run-log.js';
import { RunCatalogue, type RunPage } from './runs.js';
import { ServiceView } from './service-view.js';
import { checkDrop, isPageFile, isRefusal, putDropFile, UploadError } from './uploads.js';

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
  close(): Promise<void>;
}

/** What a run error means and what to do about it: a row of docs/errors.md's table. */
interface ErrorAdvice {
  /** "what happened" */
  readonly meaning: string;
  /** "what to do" */
  readonly todo: string;
}

/** Runs per page when the page asks for no other number, and the most it may ask for. */
const DEFAULT_PAGE = 50;
const MAX_PAGE = 200;
/** Changes are sent at most this often, gathered (a run emits dozens of events a second). */
const EVENT_FLUSH_MS = 150;

const STATIC_FILES: Readonly<Record<string, { readonly file: URL | string; readonly type: string }>> = {
  '/static/console.js': { file: new URL('console.js', CONSOLE_PAGE), type: 'text/javascript; charset=utf-8' },
  '/static/graph.js': { file: new URL('graph.js', CONSOLE_PAGE), type: 'text/javascript; charset=utf-8' },
  '/static/console.css': { file: new URL('console.css', CONSOLE_PAGE), type: 'text/css; charset=utf-8' },
  '/favicon.ico': { file: new URL('favicon.svg', CONSOLE_PAGE), type: 'image/svg+xml' },
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
      const status = isRefusal(error) ? 400 : 500;
      if (!response.headersSent) sendJson(response, status, { error: messageOf(error) }, secret);
      else response.destroy();
    });
  });
  const port = await listen(server, options.port ?? 0);
  context.origins = [`http://127.0.0.1:${String(port)}`, `http://localhost:${String(port)}`];
  return {
    url: `http://127.0.0.1:${String(port)}/`,
    async close() {
      streams.close();
      log.close();
      await stop(server);
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

interface Call {
  readonly context: RouteContext;
  readonly url: URL;
  /** The part of the path the route's pattern captures (a run id, a drop), decoded. */
  readonly param: string;
  readonly request: IncomingMessage;
  readonly response: ServerResponse;
}

/** A route's JSON answer (200 unless it says), or nothing when it has answered itself. */
type Answer = { readonly status?: number; readonly json: unknown } | undefined;
/** A refusal thrown by a route (isRefusal) is a 400 with its message; anything else a 500. */
type Route = (call: Call) => Answer | Promise<Answer>;

const ROUTES: readonly (readonly [method: string, path: string | RegExp, route: Route])[] = [
  ['GET', '/', servePage],
  ['GET', /^(\/static\/.+|\/vendor\/.+|\/favicon\.ico)$/, sendFile],
  ['GET', '/api/overview', ({ context }) => ({ json: overview(context) })],
  ['GET', '/api/runs', async ({ context, url }) => ({ json: await runPage(context, url) })],
  ['GET', /^\/api\/runs\/([^/]+)$/, runDetail],
  ['GET', '/api/download', download],
  ['GET', '/api/service', serviceSnapshot],
  ['GET', '/api/events', followEvents],
  ['POST', '/api/drops/check', checkDropRequest],
  ['PUT', /^\/api\/drops\/([^/]+)\/files$/, putDropRequest],
];

async function handle(context: RouteContext, request: IncomingMessage, response: ServerResponse) {
  const url = new URL(request.url ?? '/', 'http://127.0.0.1');
  const reply = (status: number, body: unknown): void => {
    sendJson(response, status, body, context.secret);
  };
  if (!fromThisConsole(context, request)) {
    reply(403, { error: 'the console answers pages it serves on 127.0.0.1 only' });
    return;
  }
  const method = request.method ?? 'GET';
  for (const [routeMethod, path, route] of ROUTES) {
    const match =
      typeof path === 'string' ? (url.pathname === path ? [path] : null) : path.exec(url.pathname);
    if (routeMethod !== method || match === null) continue;
    const param = decodeURIComponent(match[1] ?? '');
    const answer = await route({ context, url, param, request, response });
    if (answer !== undefined) reply(answer.status ?? 200, answer.json);
    return;
  }
  reply(404, { error: `no ${method} ${url.pathname} here` });
}

/** Only pages of this console may call it: a page elsewhere (or a DNS-rebound name) may not. */
function fromThisConsole(context: RouteContext, request: IncomingMessage): boolean {
  const origins = context.origins ?? [];
  const { host = '', origin } = request.headers;
  return origins.includes(`http://${host}`) && (origin === undefined || origins.includes(origin));
}

/**
 * The page with the current state in it (what it would otherwise ask for first), so that it
 * shows the runs as soon as it loads, headless `--dump-dom` too; the event stream keeps it live.
 */
async function servePage({ context, response }: Call): Promise<Answer> {
  const [html, runs, service] = await Promise.all([
    readFile(new URL('index.html', CONSOLE_PAGE), 'utf8'),
    runPage(context, new URL('http://127.0.0.1/')),
    context.service?.snapshot().catch(() => null) ?? null,
  ]);
  const known = {
    overview: overview(context),
    definition: context.local.definition,
    errors: Object.fromEntries(context.advice),
  };
  let state = JSON.stringify({ ...known, runs, service });
  // Never expected: the page then asks the API for the runs, which withholds them and says so.
  if (context.secret !== '' && state.includes(context.secret))
    state = JSON.stringify({ ...known, runs: null, service: null });
  const script = `<script id="initial-state" type="application/json">${state.replaceAll('<', '\\u003c')}</script>`;
  const page = html.replace('<!-- initial state -->', () => script);
  send(response, 200, 'text/html; charset=utf-8', page, context.secret);
  return undefined;
}

function runPage(context: RouteContext, url: URL): Promise<RunPage> {
  const state = url.searchParams.get('state') ?? '';
  const drop = url.searchParams.get('drop');
  return context.runs.page({
    ...(drop === null ? {} : { drop }),
    offset: integerParam(url, 'offset', 0, 0, Number.MAX_SAFE_INTEGER),
    limit: integerParam(url, 'limit', DEFAULT_PAGE, 1, MAX_PAGE),
    ...((LISTED_RUN_STATES as readonly string[]).includes(state) ? { state: state as ListedRunState } : {}),
  });
}

async function runDetail({ context, param }: Call): Promise<Answer> {
  const detail = await context.runs.detail(param);
  if (detail === null) return { status: 404, json: { error: 'no such run' } };
  const { summary, model } = detail;
  const record = model === null ? null : await context.bucket.modelRecord(summary.drop, model.modelId);
  const code = summary.error?.code;
  const advice = code === undefined ? null : (context.advice.get(code) ?? null);
  return { json: { ...detail, record, advice } };
}

async function serviceSnapshot({ context }: Call): Promise<Answer> {
  if (context.service === undefined)
    return { status: 404, json: { error: 'local mode is using another training service (--service-url)' } };
  return { json: await context.service.snapshot() };
}

async function checkDropRequest({ context, request }: Call): Promise<Answer> {
  const body = await readJson(request);
  const drop = typeof body.drop === 'string' ? body.drop : '';
  const files = Array.isArray(body.files) ? body.files.filter(isPageFile) : [];
  const trainJson = Array.isArray(body.trainJson) ? (body.trainJson as number[]) : [];
  await checkDrop(drop, files, Buffer.from(trainJson));
  return { json: { drop, files: files.length, prefix: `s3://${context.local.bucket}/inbox/${drop}/` } };
}

async function putDropRequest({ context, url, param, request }: Call): Promise<Answer> {
  const name = url.searchParams.get('name') ?? '';
  const etag = await putDropFile(context.local.s3.client, context.local.bucket, param, name, request);
  return { json: { etag } };
}

function followEvents({ context, response }: Call): Answer {
  context.streams.add(response);
  return undefined;
}

async function sendFile({ response, param }: Call): Promise<Answer> {
  const file = STATIC_FILES[param];
  if (file === undefined) return { status: 404, json: { error: `no ${param} here` } };
  const body = await readFile(file.file);
  response.writeHead(200, { 'content-type': file.type, 'cache-control': 'no-cache' });
  response.end(body);
  return undefined;
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

async function download({ context, url, response }: Call): Promise<Answer> {
  const key = url.searchParams.get('key') ?? '';
  const file = await context.bucket.modelFile(key);
  if (file === null) return { status: 404, json: { error: `no model file ${key}` } };
  const name = key.split('/').at(-1) ?? 'model';
  response.writeHead(200, {
    'content-type': name.endsWith('.json') ? 'application/json' : 'application/octet-stream',
    'content-length': String(file.bytes),
    'content-disposition': `attachment; filename="${name}"`,
  });
  await pipeline(file.body, response);
  return undefined;
}

/** The body as a JSON object (small bodies only: the drop check's files and train.json). */
async function readJson(request: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (bytes > 8_000_000) throw new UploadError('the list of files is too long (over 8 MB)');
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
  send(response, status, 'application/json; charset=utf-8', JSON.stringify(body), secret);
}

/** Every answer built from the state passes here: one that would hold the key is withheld. */
function send(response: ServerResponse, status: number, type: string, text: string, secret: string): void {
  if (secret !== '' && text.includes(secret)) {
    // Never expected (the state holds no key); if it ever happens the answer is withheld.
    sendJson(response, 500, { error: 'this answer was withheld: it would have contained the API key' }, '');
    return;
  }
  response.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
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
  #flush: NodeJS.Timeout | undefined;

  constructor(log: RunLog) {
    log.on('change', (runId) => {
      this.#changed.add(runId);
      this.#flush ??= setTimeout(() => {
        this.#send();
      }, EVENT_FLUSH_MS);
    });
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
    for (const response of this.#responses) response.end();
    this.#responses.clear();
  }
}

async function listen(server: Server, port: number): Promise<number> {
  try {
    await listenOn(server, '127.0.0.1', port);
  } catch (error) {
    const inUse = (error as NodeJS.ErrnoException).code === 'EADDRINUSE';
    const why = inUse ? 'is in use' : `cannot be used (${messageOf(error)})`;
    throw new Error(
      `the console's port ${String(port)} on 127.0.0.1 ${why}: choose another (--console-port), or leave it out for a free one`,
      { cause: error },
    );
  }
  return (server.address() as AddressInfo).port;
}

/**
 * The rows of docs/errors.md's table by code, Markdown code spans left as backticks: the one place
 * these words live (test/docs.test.ts keeps the table in step with RUN_ERROR_CODES). The page
 * shows the row of a failed run's code.
 */
async function loadErrorAdvice(): Promise<ReadonlyMap<string, ErrorAdvice>> {
  const rows = (await readFile(ERRORS_DOC, 'utf8')).matchAll(/^\|\s*`([a-z_]+)`\s*\|(.*)\|(.*)\|\s*$/gm);
  return new Map(
    [...rows].map(([, code = '', meaning = '', todo = '']) => [
      code,
      { meaning: meaning.trim(), todo: todo.trim() },
    ]),
  );
}

/** dagre's browser bundle (a global `dagre`), from the installed package. */
function dagreBundle(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('@dagrejs/dagre')), 'dagre.min.js');
}
