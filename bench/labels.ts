/**
 * Labels: label_examples answering 10,000 held-out examples by id, against the floor of two bare
 * HTTP round trips per example to the same simulated service (its own process); and the CPU of
 * indexing a labels file and matching 100,000 examples by masked text against by id (a fresh
 * process each, no service: the matching alone, which is what grows with the file).
 *
 * Knobs: BENCH_LABELS (default 10000), BENCH_LABELS_MATCH (default 100000).
 */
import { envInteger, sideBySide, type Benchmark } from './harness/benchmark.js';
import { figure } from './harness/figures.js';
import { runClient, startServers } from './harness/processes.js';

const MODULE = 'clients/labels.ts';

export const labels: Benchmark = {
  name: 'labels',
  title: 'held-out examples: by id vs two bare round trips each; by masked text vs by id (CPU)',
  async run(context) {
    const count = envInteger('BENCH_LABELS', 10_000);
    const matchCount = envInteger('BENCH_LABELS_MATCH', 100_000);
    const servers = await startServers({
      heldOutCount: count,
      readingMs: 0,
      structuringMs: 0,
      credits: 10,
    });
    const { endpoints } = servers;
    try {
      context.log(
        `labels: ${String(context.runs)} rounds of ${String(count)} examples, step vs bare round trips`,
      );
      const answered = await sideBySide(
        context.runs,
        {
          hopper: (round) =>
            runClient({ module: MODULE, export: 'labelStep', args: { ...endpoints, count, round } }),
          floor: (round) =>
            runClient({ module: MODULE, export: 'bareLabels', args: { ...endpoints, count, round } }),
        },
        context.log,
      );
      context.log(
        `labels: ${String(context.runs)} rounds of matching ${String(matchCount)} examples, by text vs by id`,
      );
      const matched = await sideBySide(
        context.runs,
        {
          text: () =>
            runClient({ module: MODULE, export: 'matchLabels', args: { count: matchCount, by: 'text' } }),
          id: () =>
            runClient({ module: MODULE, export: 'matchLabels', args: { count: matchCount, by: 'id' } }),
        },
        context.log,
      );
      const patternTests = Number(matched.text[0]?.patternTests ?? NaN);
      return [
        figure({
          name: 'labels.by_id_seconds',
          label: `labels: ${String(count)} examples by id (baseline: 2 bare round trips each)`,
          unit: 's',
          runs: answered.hopper.map((run) => run.wallMs / 1000),
          baselineRuns: answered.floor.map((run) => run.wallMs / 1000),
          goal: { on: 'ratio', op: '<=', limit: 1.25 },
          note: 'label_examples.run (index load, 2 requests per example, the final GET); the floor: GET next + POST label per example on one keep-alive connection',
        }),
        figure({
          name: 'labels.by_id_cpu',
          label: `labels: ${String(count)} examples by id, client CPU (baseline: 2 bare round trips each)`,
          unit: 's',
          runs: answered.hopper.map((run) => run.cpuMs / 1000),
          baselineRuns: answered.floor.map((run) => run.cpuMs / 1000),
        }),
        figure({
          name: 'labels.match_by_text_cpu',
          label: `labels: matching ${String(matchCount)} examples by masked text, CPU (baseline: by id)`,
          unit: 's',
          runs: matched.text.map((run) => run.cpuMs / 1000),
          baselineRuns: matched.id.map((run) => run.cpuMs / 1000),
          goal: { on: 'ratio', op: '<=', limit: 1.5 },
          note: `index built from the CSV stream, then every example matched; ${String(patternTests)} placeholder pattern tests for ${String(matchCount)} examples`,
        }),
      ];
    } finally {
      await servers.close();
    }
  },
};
