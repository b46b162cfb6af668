/**
 * Every benchmark `npm run bench` runs, in order. To add one: write a module exporting a
 * Benchmark (bench/harness/benchmark.ts: a name, a title, and run() returning figures made with
 * figure() from bench/harness/figures.ts, each the median of context.runs runs side by side with
 * its baseline), put its measured clients under bench/clients/ (run them with runClient, servers
 * with startServer: bench/harness/processes.ts), and list it here.
 */
import { check } from './check.js';
import { budget } from './budget.js';
import { coldStart } from './cold-start.js';
import type { Benchmark } from './harness/benchmark.js';
import { labels } from './labels.js';
import { manyFiles } from './many-files.js';
import { polling } from './polling.js';
import { scale } from './scale.js';
import { statusLatency } from './status-latency.js';
import { transfers } from './transfers.js';

export const BENCHMARKS: readonly Benchmark[] = [
  transfers,
  manyFiles,
  labels,
  coldStart,
  polling,
  scale,
  check,
  budget,
  statusLatency,
];
