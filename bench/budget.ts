/**
 * Budget: what the credit budget's claim (lambdas/ownership/credit-ledger.ts: a GET and a
 * conditional PUT of the ledger before each training starts) adds to start_training, against the
 * same step without a budget: a fresh process per run, `BENCH_BUDGET_STARTS` trainings started
 * one after another in each, on the local S3 and the simulated service in their own processes.
 *
 * Knob: BENCH_BUDGET_STARTS (default 20).
 */
import { envInteger, sideBySide, type Benchmark } from './harness/benchmark.js';
import { figure } from './harness/figures.js';
import { runClient, startServers } from './harness/processes.js';

const MODULE = 'clients/budget.ts';

export const budget: Benchmark = {
  name: 'budget',
  title: "start_training with the credit budget's claim vs without a budget",
  async run(context) {
    const count = envInteger('BENCH_BUDGET_STARTS', 20);
    const servers = await startServers({ heldOutCount: 0, readingMs: 0, structuringMs: 0, credits: 1e6 });
    const { endpoints } = servers;
    try {
      context.log(
        `budget: ${String(context.runs)} rounds of ${String(count)} start_training, with and without a budget`,
      );
      const call = (round: number, budget: boolean) =>
        runClient({ module: MODULE, export: 'startTrainings', args: { ...endpoints, count, round, budget } });
      const started = await sideBySide(
        context.runs,
        { budget: (round) => call(round, true), none: (round) => call(round, false) },
        context.log,
      );
      return [
        figure({
          name: 'budget.start_training_ms',
          label: `budget: start_training with the budget's claim, ms per step (baseline: no budget)`,
          unit: 'ms',
          runs: started.budget.map((run) => Number(run.msPerStep)),
          baselineRuns: started.none.map((run) => Number(run.msPerStep)),
          note: `${String(count)} trainings started one after another per run, a fresh process each; the claim is a GET and a conditional PUT of status/.credits/ledger.json (up to ${String(count)} entries)`,
        }),
        figure({
          name: 'budget.start_training_cpu_ms',
          label: `budget: start_training with the budget's claim, client CPU ms per step (baseline: no budget)`,
          unit: 'ms',
          runs: started.budget.map((run) => run.cpuMs / count),
          baselineRuns: started.none.map((run) => run.cpuMs / count),
        }),
      ];
    } finally {
      await servers.close();
    }
  },
};
