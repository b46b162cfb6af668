/**
 * Knobs of the simulated training service. Every knob has a default that makes the
 * service behave like a quick, healthy real one; tests and the CLI override what they need.
 * Durations are milliseconds of the service clock (see clock.ts).
 */

import {
  DOWNLOAD_LINK_TTL_MS,
  ENDPOINTS as API_ENDPOINTS,
  isKnownNextAction,
  NEXT_ACTIONS,
  UPLOAD_URL_TTL_MS,
  type Encoder,
  type EndpointName as ApiEndpointName,
} from '../../lambdas/service-client/contract.js';

/** The presigned transfers (file port): no rate limit, and most kinds do not apply to them. */
export const FILE_ENDPOINTS = ['fileUpload', 'fileDownload'] as const;

/**
 * Names of the endpoints, used to aim failure injection and to count requests: the contract's
 * (contract.ts owns them), and the presigned transfers: PUT to an upload URL ('fileUpload') and
 * GET of a download URL ('fileDownload').
 */
export type EndpointName = ApiEndpointName | (typeof FILE_ENDPOINTS)[number];
export const ENDPOINTS: readonly EndpointName[] = [
  ...(Object.keys(API_ENDPOINTS) as ApiEndpointName[]),
  ...FILE_ENDPOINTS,
];

/** The fault kinds other than misbehaviours. */
const PLAIN_FAULT_KINDS = ['429', '500', '503', 'drop', 'drop_after', 'stall', 'cut', 'expire'] as const;

/**
 * The misbehaviours: kinds no retry mends, or that mangle an answer after processing
 * (faults/misbehaviour.ts says what each does). Declared here, below every layer, because
 * FaultRule and its validation need them.
 */
export const MISBEHAVIOUR_KINDS = [
  'garble',
  'missing_field',
  'wrong_type',
  'huge_body',
  'trickle',
  'redirect',
  'repeat_cursor',
  'wrong_bytes',
  'no_task',
] as const;
export type MisbehaviourKind = (typeof MISBEHAVIOUR_KINDS)[number];

export const GARBLE_FORMS = ['html_502', 'truncated', 'empty'] as const;
export type GarbleForm = (typeof GARBLE_FORMS)[number];

/** The settings misbehaviour kinds read from their FaultRule. */
export interface MisbehaviourSettings {
  /** For 'garble': how the answer is mangled; absent: one of GARBLE_FORMS at random per answer. */
  form?: GarbleForm;
  /** For 'missing_field' and 'wrong_type': the record field to spoil. */
  field?: string;
  /** For 'huge_body'. Default 10 MiB. */
  bodyBytes?: number;
  /** For 'trickle'. Default 1000. */
  byteIntervalMs?: number;
}

export function isMisbehaviour(kind: string): kind is MisbehaviourKind {
  return (MISBEHAVIOUR_KINDS as readonly string[]).includes(kind);
}

/**
 * One failure-injection rule. A request to a matching endpoint fails with `kind` when the
 * rule fires: for each matching request the rule fires while `count` lasts (the first N
 * matching requests), else with probability `rate`, drawn from the service's seeded PRNG.
 */
export interface FaultRule extends MisbehaviourSettings {
  /** Endpoint the rule applies to, or '*' for every endpoint. */
  endpoint: EndpointName | '*';
  /**
   * - '429': 429 rate_limited with `Retry-After: retryAfterSeconds`, before any side effect
   * - '500' / '503': server_error / unavailable, before any side effect
   * - 'drop': the socket is destroyed before any side effect, no response
   * - 'drop_after': the request is fully processed (side effects happen), then the socket is
   *    destroyed instead of answering: the ambiguous failure a client must survive
   * - 'stall': the answer is delayed by `stallMs` (to trigger client timeouts)
   * - 'cut': file downloads only: headers and `cutAfterBytes` bytes of body, then the socket is destroyed
   * - 'expire': presigned file URLs only: 403 url_expired before any side effect, as if the URL's
   *    lifetime had ended just before the request (an expiry mid-upload or mid-copy, on demand)
   * - the misbehaviours of misbehaviour.ts: 'garble' (after processing), 'missing_field',
   *   'wrong_type', 'huge_body', 'trickle', 'redirect', 'repeat_cursor', 'wrong_bytes', 'no_task'
   */
  kind: (typeof PLAIN_FAULT_KINDS)[number] | MisbehaviourKind;
  /** Fire for the first `count` matching requests. */
  count?: number;
  /** Otherwise fire with this probability (0..1). */
  rate?: number;
  /** For '429'. Default 1. */
  retryAfterSeconds?: number;
  /** For 'stall'. Default 5000. */
  stallMs?: number;
  /** For 'cut'. Default 1024. */
  cutAfterBytes?: number;
}

/** An encoder on offer (docs/service-contract.md, B7): the client's record type. */
export type { Encoder };

const HOUR = 60 * 60_000;

/**
 * The knobs and their defaults. Durations are milliseconds of the service clock (clock.ts).
 */
export const DEFAULT_OPTIONS = {
  /** Interface to bind. */
  host: '127.0.0.1',
  /** API port; 0 picks a free one. */
  port: 0,
  /** Port of the presigned file URLs (uploads and downloads); 0 picks a free one. */
  filePort: 0,
  /** The one account's API key. */
  apiKey: 'dev-key',
  /** Credits of the account. */
  credits: 10,
  /** Seed of the PRNG behind fault rates and generated data. */
  seed: 1,
  /** Failure injection rules, checked in order; the first that fires wins. */
  faults: [] as FaultRule[],
  /**
   * API requests per second the account may make (rate-limit.ts): beyond it, 429 rate_limited
   * with Retry-After, before any side effect. Presigned file transfers do not count. 0: no limit.
   */
  maxRequestsPerSecond: 0,

  /** Dataset `reading` phase (after the last file completes). */
  readingMs: 1000,
  /** Dataset `structuring` phase. */
  structuringMs: 1000,
  /** Model `queued` phase. */
  queuedMs: 500,
  /** Model `training` phase. */
  trainingMs: 2000,

  /** The next N trainings fail (each returns its credit). */
  failTrainings: 0,
  /** Every dataset ends its reading phase as unreadable, whatever its data. */
  unreadable: false,
  /** Held-out examples per dataset (capped by the number of rows). */
  heldOutCount: 5,
  /** Label choices offered for held-out examples. */
  labelChoices: ['positive', 'negative', 'neutral'],
  /** Encoders on offer; exactly one must be default. */
  encoders: [
    { id: 'enc-small', name: 'Small encoder', default: true },
    { id: 'enc-base', name: 'Base encoder', default: false },
  ] as Encoder[],

  /** Lifetime of an upload URL. */
  uploadUrlTtlMs: UPLOAD_URL_TTL_MS,
  /** Lifetime of a download link (still never past files_expire_at). */
  downloadUrlTtlMs: DOWNLOAD_LINK_TTL_MS,
  /** Size of every generated model file. */
  modelBytes: 1024 * 1024,
  /** Dataset data lifetime from creation (then `expired`). */
  datasetTtlMs: 7 * 24 * HOUR,
  /** Model files lifetime from the end of training (then `none`). */
  modelFilesTtlMs: 24 * HOUR,
  /**
   * Report these next_action values under another name, e.g. `{ start_training: 'celebrate' }`:
   * the service then speaks a value no client knows, to test that a client names it instead of
   * crashing. Only what records show changes; the service's own rules are untouched.
   */
  renameNextActions: {} as Record<string, string>,
};

export type SimulatedServiceOptions = typeof DEFAULT_OPTIONS & {
  /** Tests only: the metrics the next trainings report, one entry each, instead of generated ones. */
  trainingMetrics?: Record<string, number>[];
  /** Use a manual clock starting at this ISO time instead of following the system clock. */
  manualClockStart?: string;
};

/** A fault rule's settings that are counts (integers >= 0); `rate` is a probability, `form` and `field` words. */
export const FAULT_COUNTS = [
  'count',
  'retryAfterSeconds',
  'stallMs',
  'cutAfterBytes',
  'bodyBytes',
  'byteIntervalMs',
] as const;

const FAULT_KINDS: readonly FaultRule['kind'][] = [...PLAIN_FAULT_KINDS, ...MISBEHAVIOUR_KINDS];

const isCount = (value: unknown): boolean => Number.isSafeInteger(value) && (value as number) >= 0;

/**
 * Throws an Error naming the first knob with a value the service cannot run with. Called on
 * start and on every configure(), so a typo in a test fails loudly instead of doing nothing.
 */
export function validateOptions(options: SimulatedServiceOptions): void {
  // Every number knob but the seed is a count, a port or a duration: an integer >= 0.
  for (const [knob, fallback] of Object.entries(DEFAULT_OPTIONS)) {
    const value: unknown = options[knob as keyof SimulatedServiceOptions];
    if (typeof fallback === 'number' && knob !== 'seed' && !isCount(value))
      throw new Error(`${knob} must be an integer >= 0, got ${String(value)}`);
  }
  if (options.port > 65535 || options.filePort > 65535) throw new Error('port and filePort must be <= 65535');
  if (!Number.isSafeInteger(options.seed)) throw new Error(`seed must be an integer, got ${options.seed}`);
  if (options.apiKey === '' || /\s/.test(options.apiKey))
    throw new Error('apiKey must be non-empty, without spaces');
  if (options.labelChoices.length === 0 || options.labelChoices.some((choice) => choice === '')) {
    throw new Error('labelChoices must be non-empty strings, at least one');
  }
  if (new Set(options.labelChoices).size !== options.labelChoices.length)
    throw new Error('labelChoices repeat');
  if (options.encoders.filter((encoder) => encoder.default).length !== 1) {
    throw new Error('encoders: exactly one must be default');
  }
  if (options.encoders.some((encoder) => encoder.id === '')) throw new Error('encoders: an id is empty');
  if (new Set(options.encoders.map((encoder) => encoder.id)).size !== options.encoders.length) {
    throw new Error('encoders: ids repeat');
  }
  if (options.manualClockStart !== undefined && Number.isNaN(Date.parse(options.manualClockStart))) {
    throw new Error(`manualClockStart is not an ISO time: ${options.manualClockStart}`);
  }
  for (const [from, to] of Object.entries(options.renameNextActions)) {
    if (!isKnownNextAction(from)) {
      throw new Error(
        `renameNextActions: ${from} is not a next_action (one of ${Object.keys(NEXT_ACTIONS).join(', ')})`,
      );
    }
    if (!/^[a-z_]{1,64}$/.test(to)) throw new Error(`renameNextActions: ${from} -> "${to}" is not a name`);
  }
  for (const [index, rule] of options.faults.entries()) validateFaultRule(rule, `faults[${index}]`);
}

export function validateFaultRule(rule: FaultRule, where: string): void {
  if (rule.endpoint !== '*' && !(ENDPOINTS as readonly string[]).includes(rule.endpoint)) {
    throw new Error(
      `${where}.endpoint: unknown endpoint ${rule.endpoint} (one of *, ${ENDPOINTS.join(', ')})`,
    );
  }
  if (!FAULT_KINDS.includes(rule.kind)) {
    throw new Error(`${where}.kind: unknown kind ${rule.kind} (one of ${FAULT_KINDS.join(', ')})`);
  }
  for (const field of FAULT_COUNTS) {
    if (rule[field] !== undefined && !isCount(rule[field]))
      throw new Error(`${where}.${field} must be an integer >= 0`);
  }
  if (rule.rate !== undefined && !(rule.rate >= 0 && rule.rate <= 1))
    throw new Error(`${where}.rate must be in 0..1`);
  if (rule.form !== undefined && !(GARBLE_FORMS as readonly string[]).includes(rule.form))
    throw new Error(`${where}.form: unknown form ${rule.form} (one of ${GARBLE_FORMS.join(', ')})`);
  if (rule.field !== undefined && !/^[a-z_]{1,64}$/.test(rule.field))
    throw new Error(`${where}.field: "${rule.field}" is not a field name`);
  if (
    (rule.form !== undefined && rule.kind !== 'garble') ||
    (rule.field !== undefined && !isMisbehaviour(rule.kind))
  ) {
    throw new Error(
      `${where}: ${rule.form !== undefined ? 'form' : 'field'} does not apply to kind ${rule.kind}`,
    );
  }
}
