/**
 * What a benchmark reports: figures, each the median of several runs measured side by side with
 * its baseline, and the goal it is held to. One entry of bench/results.json per figure.
 */

/** A goal on a figure's ratio to its baseline, or on its value when there is no baseline. */
export interface Goal {
  /** What is compared: `ratio` (value / baseline) or `value` itself. */
  readonly on: 'ratio' | 'value';
  readonly op: '<=' | '>=';
  readonly limit: number;
}

export interface Figure {
  /** Stable, e.g. `copy.throughput_1gib`. */
  readonly name: string;
  /** What it measures, for the table. */
  readonly label: string;
  /** Median over the runs. */
  readonly value: number;
  readonly unit: string;
  /** Median of the baseline's runs, or null when the figure has none. */
  readonly baseline: number | null;
  /** Median of the per-run ratios value / baseline (paired runs, so shared noise cancels). */
  readonly ratio: number | null;
  readonly goal: Goal | null;
  /** Whether the goal is met; null without a goal. */
  readonly met: boolean | null;
  /**
   * When the goal is missed: how far off, in the goal's own terms (e.g. `ratio 0.62, goal >= 0.8:
   * 23% short`). Null when met or without a goal.
   */
  readonly shortBy: string | null;
  /** (max - min) / median of the value's runs: how much the runs disagree. */
  readonly spread: number;
  /** Every run's value, then the baseline's, in the order measured (discarded rounds too). */
  readonly runs: readonly number[];
  readonly baselineRuns: readonly number[];
  /** Rounds (indexes into runs) left out of value, baseline, ratio and spread: see outlyingRounds. */
  readonly discarded: readonly number[];
  /** Anything a reader needs to weigh the figure (sizes, settings). */
  readonly note?: string;
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

export function spreadOf(values: readonly number[]): number {
  const middle = median(values);
  if (values.length < 2 || middle === 0) return 0;
  return (Math.max(...values) - Math.min(...values)) / Math.abs(middle);
}

export interface FigureInput {
  readonly name: string;
  readonly label: string;
  readonly unit: string;
  readonly runs: readonly number[];
  /** Paired with `runs` by index when given. */
  readonly baselineRuns?: readonly number[];
  /** Rounds to leave out (outlyingRounds of the baseline), kept in runs and baselineRuns. */
  readonly discard?: readonly number[];
  readonly goal?: Goal;
  readonly note?: string;
}

/**
 * A baseline run more than this many times slower or faster than the median of the baseline's
 * runs is an outlier: the machine was busy (or idle) in a way it was not for the others.
 */
export const OUTLIER_FACTOR = 1.5;

/**
 * The rounds whose baseline is an outlier (OUTLIER_FACTOR off the median of `baselineRuns`), to
 * leave out of a figure rather than report a ratio against them. None when that would leave none.
 */
export function outlyingRounds(baselineRuns: readonly number[], factor = OUTLIER_FACTOR): number[] {
  const middle = median(baselineRuns);
  const outlying = baselineRuns.flatMap((value, index) =>
    value > middle * factor || value * factor < middle ? [index] : [],
  );
  return outlying.length === baselineRuns.length ? [] : outlying;
}

/** A figure from its runs (and its baseline's, paired by index), without the rounds in `discard`. */
export function figure(input: FigureInput): Figure {
  const discarded = [...(input.discard ?? [])].sort((a, b) => a - b);
  const kept = <T>(values: readonly T[]) => values.filter((_, index) => !discarded.includes(index));
  const runs = kept(input.runs);
  const value = median(runs);
  const baselineRuns = kept(input.baselineRuns ?? []);
  const baseline = baselineRuns.length === 0 ? null : median(baselineRuns);
  const ratios = baselineRuns.flatMap((base, index) => {
    const run = runs[index];
    return run === undefined || base === 0 ? [] : [run / base];
  });
  const ratio = ratios.length === 0 ? null : median(ratios);
  const goal = input.goal ?? null;
  const compared = goal === null ? null : goal.on === 'ratio' ? ratio : value;
  const met =
    goal === null || compared === null
      ? null
      : goal.op === '<='
        ? compared <= goal.limit
        : compared >= goal.limit;
  return {
    name: input.name,
    label: input.label,
    value,
    unit: input.unit,
    baseline,
    ratio,
    goal,
    met,
    shortBy: met === false && goal !== null && compared !== null ? shortfall(goal, compared) : null,
    spread: spreadOf(runs),
    runs: input.runs,
    baselineRuns: input.baselineRuns ?? [],
    discarded,
    ...(input.note === undefined ? {} : { note: input.note }),
  };
}

function shortfall(goal: Goal, compared: number): string {
  const off = goal.op === '>=' ? (goal.limit - compared) / goal.limit : (compared - goal.limit) / goal.limit;
  return `${goal.on} ${round(compared)}, goal ${goal.op} ${goal.limit}: ${(off * 100).toFixed(0)}% ${
    goal.op === '>=' ? 'short' : 'over'
  }`;
}

export function round(value: number): number {
  if (!Number.isFinite(value)) return value;
  const digits = Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? 1 : Math.abs(value) >= 1 ? 2 : 3;
  return Number(value.toFixed(digits));
}
