/**
 * A benchmark entry: a name, and a run that measures its figures side by side with their
 * baselines. Entries are listed in bench/benchmarks.ts; `npm run bench` runs them in order.
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import type { Figure } from './figures.js';
import type { Measurement } from './protocol.js';

export interface BenchContext {
  /** Runs per figure (BENCH_RUNS, default 3): each figure is their median. */
  readonly runs: number;
  /** A progress line on stderr (the table goes to stdout). */
  readonly log: (line: string) => void;
}

export interface Benchmark {
  /** Short and stable: the prefix of its figures' names, and how to pick it on the command line. */
  readonly name: string;
  /** What it measures, one line, for the summary. */
  readonly title: string;
  run(context: BenchContext): Promise<readonly Figure[]>;
}

/**
 * Runs each of `variants` once per round for `rounds` rounds, the order reversed every other
 * round (A B, B A, A B ...) so a drift of the machine's load falls on both alike; returns each
 * variant's results in round order (index i of every list is the same round: paired).
 */
export async function sideBySide<K extends string, R>(
  rounds: number,
  variants: Readonly<Record<K, (round: number) => Promise<R>>>,
  /** Told each run's measurement as it ends (a long run shows progress, and a cut one its figures). */
  log?: (line: string) => void,
): Promise<Record<K, R[]>> {
  const names = Object.keys(variants) as K[];
  const results = Object.fromEntries(names.map((name) => [name, [] as R[]])) as Record<K, R[]>;
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? names : [...names].reverse();
    for (const name of order) {
      const machineBefore = machineCpu();
      const result = await variants[name](round);
      results[name].push(result);
      const run = result as Partial<Measurement>;
      if (log !== undefined && run.wallMs !== undefined) {
        log(
          `  ${name} round ${String(round + 1)}: ${(run.wallMs / 1000).toFixed(2)} s, ` +
            `CPU ${((run.cpuMs ?? 0) / 1000).toFixed(2)} s, RSS +${((run.rssGrowth ?? 0) / MiB).toFixed(0)} MiB, ` +
            `load ${loadavg()[0]!.toFixed(1)}, steal ${stealText(machineBefore, machineCpu())}`,
        );
      }
    }
  }
  return results;
}

/** The machine's CPU time so far (all cores, in ticks) and the part the hypervisor took: Linux only. */
export interface MachineCpu {
  readonly total: number;
  readonly steal: number;
}

export function machineCpu(): MachineCpu | null {
  try {
    // cpu  user nice system idle iowait irq softirq steal guest guest_nice
    const ticks = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    return { total: ticks.slice(0, 8).reduce((sum, tick) => sum + tick, 0), steal: ticks[7] ?? 0 };
  } catch {
    return null;
  }
}

/**
 * The share of the machine's CPU time the hypervisor took between two readings: a VM whose host
 * is busy runs slower, and its processes' CPU time counts the stolen time as their own.
 */
export function stealText(before: MachineCpu | null, after: MachineCpu | null): string {
  if (before === null || after === null || after.total === before.total) return 'unknown';
  return `${(((after.steal - before.steal) / (after.total - before.total)) * 100).toFixed(1)}%`;
}

export const MiB = 1024 * 1024;
export const GiB = 1024 * MiB;

/** A whole number from the environment (a benchmark's size knob), or `fallback`. */
export function envInteger(name: string, fallback: number, minimum = 1): number {
  const text = process.env[name];
  if (text === undefined || text === '') return fallback;
  if (!/^\d+$/.test(text) || Number(text) < minimum) {
    throw new Error(`${name} must be a whole number >= ${minimum}, got ${JSON.stringify(text)}`);
  }
  return Number(text);
}
