/**
 * `npm run bench [-- <benchmark name>...]`: runs the benchmarks (all, or those named), prints a
 * summary table and writes bench/results.json (one entry per figure). docs/performance.md says
 * how to read them.
 *
 * Knobs: BENCH_RUNS (runs per figure, default 3, at least 3 for a median worth the name), and
 * each benchmark's own (see its module).
 */
import { writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { BENCHMARKS } from './benchmarks.js';
import { envInteger, machineCpu, stealText } from './harness/benchmark.js';
import { round, type Figure } from './harness/figures.js';
import { formatTable } from './harness/table.js';

const RESULTS = new URL('./results.json', import.meta.url);

const wanted = process.argv.slice(2);
const unknown = wanted.filter((name) => !BENCHMARKS.some((benchmark) => benchmark.name === name));
if (unknown.length > 0) {
  console.error(
    `unknown benchmark ${unknown.join(', ')}; the benchmarks are: ${BENCHMARKS.map((b) => b.name).join(', ')}`,
  );
  process.exit(2);
}
const chosen = BENCHMARKS.filter((benchmark) => wanted.length === 0 || wanted.includes(benchmark.name));
const runs = envInteger('BENCH_RUNS', 3);
const context = {
  runs,
  log: (line: string) => {
    process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
  },
};

const started = performance.now();
// The machine's load average (1, 5, 15 minutes) at the start and end, and the CPU its host took
// (harness/benchmark.ts): was it quiet?
const loadAtStart = loadavg();
const machineAtStart = machineCpu();
const figures: Figure[] = [];
const failed: { benchmark: string; error: string }[] = [];
for (const benchmark of chosen) {
  context.log(`${benchmark.name}: ${benchmark.title}`);
  const benchmarkStarted = performance.now();
  try {
    figures.push(...(await benchmark.run(context)));
  } catch (error) {
    // One broken benchmark must not hide the others' figures.
    const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
    failed.push({ benchmark: benchmark.name, error: message });
    context.log(`${benchmark.name} FAILED: ${message}`);
  }
  context.log(`${benchmark.name}: ${((performance.now() - benchmarkStarted) / 1000).toFixed(0)} s`);
}
const seconds = (performance.now() - started) / 1000;

const results = {
  date: new Date().toISOString(),
  node: process.version,
  cpus: availableParallelism(),
  cpuModel: cpus()[0]?.model ?? 'unknown',
  runsPerFigure: runs,
  benchmarks: chosen.map((benchmark) => benchmark.name),
  seconds: Math.round(seconds),
  loadAverage: { start: loadAtStart.map(round), end: loadavg().map(round) },
  cpuStolen: stealText(machineAtStart, machineCpu()),
  failed,
  figures,
};
await writeFile(RESULTS, `${JSON.stringify(results, null, 2)}\n`);
console.log(formatTable(figures));
console.log(
  `\n${String(figures.length)} figures, ${String(figures.filter((f) => f.met === false).length)} goals missed; ` +
    `medians of ${String(runs)} runs; ${seconds.toFixed(0)} s; written to bench/results.json`,
);
if (failed.length > 0) {
  console.log(`FAILED: ${failed.map((f) => f.benchmark).join(', ')} (see the log above)`);
  process.exitCode = 1;
}
