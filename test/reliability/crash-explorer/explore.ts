/**
 * The crash explorer: records a clean run's side effects in order, makes a trial of each point
 * (trials.ts), runs them one after another within a count and a time, and sums up what held.
 */
import { TRAIN_JSON } from '../../../lambdas/storage/keys.js';
import { REVIEWS_FILES } from '../../helpers/fixtures.js';
import {
  recordCleanRun,
  runTrial,
  type Drop,
  type Trial,
  type TrialKind,
  type TrialResult,
} from './trials.js';
import { processKillTrial } from './process-kill.js';
import { pointOf, type Effect } from './watch.js';

/**
 * The drop explored: the example's reviews and labels, small, with suggested decisions, so that
 * every step of the state machine runs (PickDecisions too).
 */
export const EXPLORED_DROP: Drop = {
  name: 'crash',
  files: {
    ...REVIEWS_FILES,
    [TRAIN_JSON]: JSON.stringify({ name: 'crash-explorer', decisions: 'suggested', maxAttempts: 3 }),
  },
  changedTrainJson: JSON.stringify({ name: 'crash-explorer', decisions: 'suggested', maxAttempts: 2 }),
};

/**
 * Every trial of a clean run's effects: a kill after each request (S3 write or service request)
 * and before the first; a redrop, the same and changed, before the first request of each Task;
 * a garbled answer of each service API request. A kill before any other request leaves the same
 * bucket and service as the kill after the request before it (nothing between them is kept), so
 * it is not tried twice.
 */
export function trialsOf(effects: readonly Effect[], kinds: readonly TrialKind[] = ALL_KINDS): Trial[] {
  const points = [...new Set(effects.map(pointOf))];
  const taskStarts = effects.filter(
    (effect, index) => effects.findIndex((other) => other.task === effect.task) === index,
  );
  const api = [
    ...new Set(
      effects.filter((effect) => effect.kind === 'service' && effect.request.includes(' /v1/')).map(pointOf),
    ),
  ];
  const first = effects[0] === undefined ? [] : [pointOf(effects[0])];
  const of = (kind: TrialKind, list: readonly string[]): Trial[] =>
    kinds.includes(kind) ? list.map((point) => ({ kind, point })) : [];
  return [
    ...of('kill-before', first),
    ...of('kill', points),
    ...of('redrop-same', taskStarts.map(pointOf)),
    ...of('redrop-changed', taskStarts.map(pointOf)),
    ...of('garble', api),
    ...of(
      'kill-9',
      KILL_9_SAMPLE.filter((point) => points.includes(point)),
    ),
  ];
}

export const ALL_KINDS: readonly TrialKind[] = [
  'kill-before',
  'kill',
  'redrop-same',
  'redrop-changed',
  'garble',
  'kill-9',
];

/**
 * The points also tried with a real kill -9 (two process starts each, so a sample): the requests
 * that create or pay, and two that hold in-process, to compare the two ways of killing.
 */
export const KILL_9_SAMPLE: readonly string[] = [
  'CreateDataset#1 POST /v1/datasets#1',
  'UploadFiles#1 POST /v1/datasets/{id}/files/{id}/complete#1',
  'LabelExamples#1 GET /v1/datasets/{id}/labels/next#1',
  'StartTraining#1 POST /v1/datasets/{id}/models#1',
];

/**
 * A trial, in this process or (kill-9) with a `hopper local` child process. The proxy counts a
 * request among all of the run's, so KILL_9_SAMPLE holds only the first of each request.
 */
export async function tryPoint(drop: Drop, trial: Trial): Promise<TrialResult> {
  if (trial.kind !== 'kill-9') return runTrial(drop, trial);
  const match = /^\S+#\d+ (.+)#(\d+)$/.exec(trial.point);
  if (match?.[1] === undefined) throw new Error(`not a point: ${trial.point}`);
  const started = performance.now();
  const result = await processKillTrial(drop, { request: match[1], ordinal: Number(match[2]) }).catch(
    (error: unknown) => ({
      reached: true,
      violations: [`harness: ${(error instanceof Error ? error.message : String(error)).slice(0, 300)}`],
      seconds: (performance.now() - started) / 1000,
    }),
  );
  return { ...result, trial };
}

export interface Exploration {
  readonly effects: readonly Effect[];
  readonly results: readonly TrialResult[];
  /** Trials left out by the count or the time bound. */
  readonly notTried: number;
  readonly seconds: number;
}

export async function explore(options: {
  readonly trials?: (effects: readonly Effect[]) => readonly Trial[];
  readonly maxTrials?: number;
  readonly maxSeconds?: number;
  readonly log?: (line: string) => void;
}): Promise<Exploration> {
  const started = performance.now();
  const log = options.log ?? (() => undefined);
  const effects = await recordCleanRun(EXPLORED_DROP);
  log(`clean run: ${String(effects.length)} side effects`);
  const all = options.trials?.(effects) ?? trialsOf(effects);
  const chosen = all.slice(0, options.maxTrials ?? all.length);
  const results: TrialResult[] = [];
  for (const trial of chosen) {
    if (options.maxSeconds !== undefined && (performance.now() - started) / 1000 > options.maxSeconds) break;
    const result = await tryPoint(EXPLORED_DROP, trial);
    results.push(result);
    log(lineOf(result));
  }
  return {
    effects,
    results,
    notTried: all.length - results.length,
    seconds: (performance.now() - started) / 1000,
  };
}

/** One line per trial: held, not reached, or each invariant it broke. */
export function lineOf(result: TrialResult): string {
  const name = `${result.trial.kind} ${result.trial.point}`;
  const verdict = !result.reached ? 'not reached' : result.violations.length === 0 ? 'held' : 'FAILED';
  const detail = result.violations.map((violation) => `\n    - ${violation}`).join('');
  return `${verdict.padEnd(11)} ${name} (${result.seconds.toFixed(1)} s)${detail}`;
}

/** The figures: tried, held, failed, by kind. */
export function summaryOf(exploration: Exploration): string {
  const reached = exploration.results.filter((result) => result.reached);
  const held = reached.filter((result) => result.violations.length === 0);
  const byKind = ALL_KINDS.map((kind) => {
    const of = reached.filter((result) => result.trial.kind === kind);
    return `${kind} ${String(of.filter((result) => result.violations.length === 0).length)}/${String(of.length)}`;
  });
  return [
    `crash explorer: ${String(reached.length)} points tried, ${String(held.length)} held, ${String(reached.length - held.length)} failed (${byKind.join(', ')})`,
    `${String(exploration.effects.length)} side effects in the clean run; ${String(exploration.results.length - reached.length)} trials not reached, ${String(exploration.notTried)} not tried; ${exploration.seconds.toFixed(0)} s`,
    ...reached
      .filter((result) => result.violations.length > 0)
      .map((result) => `FAILED ${result.trial.kind} ${result.trial.point}: ${result.violations.join(' | ')}`),
  ].join('\n');
}
