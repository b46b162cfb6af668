/**
 * Misbehaviour knobs: fault kinds that make the service (or the network in front of it) answer
 * in ways no retry can mend, or mangle an answer after the request was processed. They are
 * FaultRule kinds like the others (aimed by endpoint, fired by count or rate); their names and
 * settings are declared with FaultRule in options.ts, which every layer reads, and what they do
 * is here, so the request pipeline only asks this module what to do.
 *
 * - garble:        AFTER processing, a 2xx answer arrives mangled in transit: `html_502` (a
 *                  proxy's HTML 502 page), `truncated` (the JSON cut in half, framing intact) or
 *                  `empty` (a 2xx with an empty body); without `form`, one of the three at random.
 * - missing_field: `field` (default next_action) removed from the record, or from every item of a
 *                  list page.
 * - wrong_type:    `field` (default step) given a value of the wrong type.
 * - huge_body:     the answer padded with white space to `bodyBytes` (default 10 MiB).
 * - trickle:       the answer sent one byte every `byteIntervalMs` (default 1000); on file
 *                  downloads, the file's bytes (downloads.ts).
 * - redirect:      302 to the same path under /moved, before any side effect.
 * - repeat_cursor: lists: `next` is the cursor the request came with (the first page's is one
 *                  pointing at the first page), so a client following it pages forever.
 * - wrong_bytes:   file downloads: the file is one byte longer than the model's onnx_bytes.
 * - no_task:       labels/next: 204 (no example left) while the dataset still has open tasks and
 *                  shows label_examples, so a client labelling makes no progress, round after round.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Random } from '../domain/index.js';
import { encodeCursor, writeChunks, type ListName, type Reply, type Signer } from '../http/index.js';
import {
  FILE_ENDPOINTS,
  GARBLE_FORMS,
  type EndpointName,
  type FaultRule,
  type GarbleForm,
  type MisbehaviourKind,
} from '../options.js';

export const MISBEHAVIOUR_DEFAULTS = {
  missingField: 'next_action',
  wrongTypeField: 'step',
  bodyBytes: 10 * 1024 * 1024,
  byteIntervalMs: 1000,
} as const;

/** The paged lists: they alone take a query, and 'repeat_cursor' acts on them. */
export const LIST_ENDPOINTS: readonly EndpointName[] = ['listModels', 'listDatasets'];

export function isFileEndpoint(endpoint: EndpointName): boolean {
  return (FILE_ENDPOINTS as readonly string[]).includes(endpoint);
}

/** Whether a rule of this kind can act on requests to `endpoint`. */
export function misbehaviourAppliesTo(kind: MisbehaviourKind, endpoint: EndpointName): boolean {
  switch (kind) {
    case 'wrong_bytes':
      return endpoint === 'fileDownload';
    case 'repeat_cursor':
      return LIST_ENDPOINTS.includes(endpoint);
    case 'no_task':
      return endpoint === 'nextLabelTask';
    case 'trickle':
      return endpoint !== 'fileUpload';
    default:
      return !isFileEndpoint(endpoint);
  }
}

/** The rule as it acts on one request: a garble without a form gets one drawn from `random`. */
export function resolveMisbehaviour(rule: FaultRule, random: Random): FaultRule {
  if (rule.kind !== 'garble' || rule.form !== undefined) return rule;
  const form = GARBLE_FORMS[Math.floor(random() * GARBLE_FORMS.length)] ?? 'empty';
  return { ...rule, form };
}

/** An answer given instead of processing the request ('redirect'), or undefined. */
export function earlyMisbehaviour(fault: FaultRule, req: IncomingMessage): Reply | undefined {
  if (fault.kind !== 'redirect') return undefined;
  return { status: 302, headers: { Location: `/moved${req.url ?? '/'}` } };
}

/** What the rewriting kinds need to know about the request. */
export interface AnsweredRequest {
  readonly signer: Signer;
  readonly endpoint: EndpointName;
  readonly url: URL;
}

/** The processed reply as a misbehaving service would give it (records and cursors spoiled). */
export function misbehavedReply(reply: Reply, fault: FaultRule | undefined, request: AnsweredRequest): Reply {
  if (fault === undefined || !isSuccess(reply) || !isObject(reply.body)) return reply;
  switch (fault.kind) {
    case 'missing_field':
    case 'wrong_type': {
      const missing = fault.kind === 'missing_field';
      const { missingField, wrongTypeField } = MISBEHAVIOUR_DEFAULTS;
      const field = fault.field ?? (missing ? missingField : wrongTypeField);
      // A field set to undefined is left out of the JSON.
      const spoil = (record: Record<string, unknown>) => ({
        ...record,
        [field]: missing ? undefined : wrongTypeFor(record[field]),
      });
      return { ...reply, body: eachRecord(reply.body, spoil) };
    }
    case 'repeat_cursor':
      return { ...reply, body: { ...reply.body, next: repeatedCursor(request) } };
    case 'no_task':
      return { status: 204 };
    default:
      return reply;
  }
}

/**
 * Writes `reply` the way `fault` mangles it in transit (garble, huge_body, trickle). Returns
 * false when the fault does not change how a reply is written: the caller sends it plainly.
 */
export async function sendMisbehaving(
  res: ServerResponse,
  reply: Reply,
  fault: FaultRule | undefined,
  sleep: (ms: number) => Promise<void>,
): Promise<boolean> {
  if (fault === undefined || !isSuccess(reply)) return false;
  const json = reply.body === undefined ? '' : JSON.stringify(reply.body);
  if (fault.kind === 'garble') {
    sendGarbled(res, reply, json, fault.form ?? 'empty');
    return true;
  }
  if (fault.kind !== 'huge_body' && fault.kind !== 'trickle') return false;
  const body = Buffer.from(json);
  const bodyBytes = fault.bodyBytes ?? MISBEHAVIOUR_DEFAULTS.bodyBytes;
  const size = fault.kind === 'huge_body' ? Math.max(body.length, bodyBytes) : body.length;
  res.writeHead(reply.status, {
    ...reply.headers,
    'Content-Type': 'application/json',
    'Content-Length': size,
  });
  if (fault.kind === 'huge_body') await writeChunks(res, padded(body, size));
  else await trickle(res, body.length, (index) => body.subarray(index, index + 1), fault, sleep);
  res.end();
  return true;
}

/** Writes `length` bytes one at a time (`byteAt(index)`), a 'trickle' rule's interval apart. */
export async function trickle(
  res: ServerResponse,
  length: number,
  byteAt: (index: number) => Buffer,
  fault: FaultRule,
  sleep: (ms: number) => Promise<void>,
): Promise<void> {
  // The socket's own state: once close() drops the connection the sleeps end at once, and
  // `res.destroyed` follows only at the socket's 'close' event, which this loop would outrun.
  for (let index = 0; index < length && !res.destroyed && res.socket?.destroyed === false; index++) {
    res.write(byteAt(index));
    await sleep(fault.byteIntervalMs ?? MISBEHAVIOUR_DEFAULTS.byteIntervalMs);
  }
}

const PROXY_502_PAGE =
  '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n</body>\r\n</html>\r\n';

function sendGarbled(res: ServerResponse, reply: Reply, json: string, form: GarbleForm): void {
  // Only html_502 changes an answer that has no body (204).
  const proxyPage = json === '' || form === 'html_502';
  const cut = form === 'truncated' ? json.slice(0, Math.floor(json.length / 2)) : '';
  const body = proxyPage ? PROXY_502_PAGE : cut;
  // The proxy's own framing: the headers agree with the mangled body, so only its content is wrong.
  res.writeHead(proxyPage ? 502 : reply.status, {
    'Content-Type': proxyPage ? 'text/html' : 'application/json',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

/** `head`, then spaces up to `size` bytes, in chunks of 64 KiB. */
function* padded(head: Buffer, size: number): Generator<Buffer> {
  const CHUNK = 64 * 1024;
  const padding = Buffer.alloc(CHUNK, 0x20);
  yield head;
  for (let written = head.length; written < size; written += CHUNK)
    yield padding.subarray(0, Math.min(CHUNK, size - written));
}

function isSuccess(reply: Reply): boolean {
  return reply.status >= 200 && reply.status <= 299;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Applies `change` to the record, or to every item of a page's `data`. */
function eachRecord(
  body: Record<string, unknown>,
  change: (record: Record<string, unknown>) => Record<string, unknown>,
): Record<string, unknown> {
  const data = body.data;
  if (Array.isArray(data)) {
    return { ...body, data: data.map((item: unknown) => (isObject(item) ? change(item) : item)) };
  }
  return change(body);
}

function wrongTypeFor(value: unknown): unknown {
  if (typeof value === 'string') return 42;
  if (typeof value === 'number') return String(value);
  return 'wrong';
}

/** The request's own cursor, or on a first page one that points at the first page again. */
function repeatedCursor(request: AnsweredRequest): string {
  const query = request.url.searchParams;
  const given = query.get('cursor');
  if (given !== null) return given;
  const list: ListName = request.endpoint === 'listModels' ? 'models' : 'datasets';
  const usable = query.get('usable');
  return encodeCursor(
    request.signer,
    list,
    { status: query.get('status'), usable: usable === null ? null : usable === 'true' },
    Number.MAX_SAFE_INTEGER,
  );
}
