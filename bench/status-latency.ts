/**
 * How soon `hopper status` shows a new run (issue 34: within 1 s of the upload, whatever the
 * drop's settle window): the time from S3's answer to the PUT of train.json until status/<drop>.json
 * names that upload's run, for a new drop and for a changed train.json while the first run is in
 * flight. Local mode (S3, the trigger, the state machine, the handlers) is the measured client in
 * a fresh process each round, the simulated service in its own. The baseline is the floor of
 * showing anything: one PutObject and one GetObject of a status file between the same endpoints;
 * what lies between them and the figure is S3's event reaching the trigger and the trigger's
 * conditional write. Goal: at most 1,000 ms.
 */
import { sideBySide, type Benchmark } from './harness/benchmark.js';
import { figure } from './harness/figures.js';
import { runClient, startServer } from './harness/processes.js';
import type { ClientResult } from './harness/protocol.js';

const MODULE = 'clients/status-latency.ts';
const GOAL_MS = 1000;
/** A bound on each wait (not a goal): a run that never shows fails the benchmark. */
const BOUND_MS = 30_000;

type LatencyRun = ClientResult & { readonly firstMs: number; readonly redropMs: number };

export const statusLatency: Benchmark = {
  name: 'status-latency',
  title: 'how soon hopper status shows the run of a new train.json (a new drop, and a redrop in flight)',
  async run(context) {
    const service = await startServer('service', {});
    try {
      const args = { apiUrl: service.info.apiUrl, apiKey: service.info.apiKey, boundMs: BOUND_MS };
      const results = await sideBySide(
        context.runs,
        {
          hopper: () => runClient<LatencyRun>({ module: MODULE, export: 'statusLatency', args }),
          floor: () => runClient<LatencyRun>({ module: MODULE, export: 'writeAndRead', args }),
        },
        context.log,
      );
      const note =
        'local mode with the default settle window (DROP_QUIET_MS); polled every 5 ms; in AWS, EventBridge adds its own delivery (typically under a second)';
      const latency = (name: 'firstMs' | 'redropMs', what: string) =>
        figure({
          name: `status.${name === 'firstMs' ? 'new_drop' : 'redrop'}_ms`,
          label: `hopper status shows the run of ${what} (baseline: put and get a status file)`,
          unit: 'ms',
          runs: results.hopper.map((run) => run[name]),
          baselineRuns: results.floor.map((run) => run[name]),
          goal: { on: 'value', op: '<=', limit: GOAL_MS },
          note,
        });
      return [
        latency('firstMs', 'a new drop'),
        latency('redropMs', 'a changed train.json while a run is in flight'),
      ];
    } finally {
      await service.close();
    }
  },
};
