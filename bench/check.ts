/**
 * `hopper check` on a drop of 1,000 small files: the command's work in a fresh process (the
 * folder read, every file's etag, ValidateDrop's rules, the verdict as JSON), against the floor of
 * listing the same folder and reading each of its files once, side by side. Goal: at most twice
 * the floor's wall time (check also opens each file for its size and hashes it).
 *
 * Knobs: BENCH_CHECK_FILES (default 1000), BENCH_CHECK_FILE_KIB (default 1).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { envInteger, sideBySide, type Benchmark } from './harness/benchmark.js';
import { figure } from './harness/figures.js';
import { runClient } from './harness/processes.js';

const MODULE = 'clients/check.ts';

export const check: Benchmark = {
  name: 'check',
  title: 'hopper check of a drop of many files vs listing and reading the folder',
  async run(context) {
    const count = envInteger('BENCH_CHECK_FILES', 1000);
    const kib = envInteger('BENCH_CHECK_FILE_KIB', 1);
    const parent = await mkdtemp(join(tmpdir(), 'hopper-bench-check-'));
    try {
      const folder = join(parent, 'many');
      await mkdir(folder);
      const line = '{"text":"a small file of the drop"}\n';
      const body = line.repeat(Math.ceil((kib * 1024) / line.length));
      for (let index = 0; index < count; index++) {
        await writeFile(join(folder, `part-${String(index).padStart(4, '0')}.jsonl`), body);
      }
      await writeFile(join(folder, 'train.json'), '{}');
      context.log(`check: ${String(context.runs)} rounds of ${String(count)} files of ${String(kib)} KiB`);
      const results = await sideBySide(
        context.runs,
        {
          check: () => runClient({ module: MODULE, export: 'check', args: { folder } }),
          floor: () => runClient({ module: MODULE, export: 'listAndRead', args: { folder } }),
        },
        context.log,
      );
      const label = `${String(count)} files of ${String(kib)} KiB`;
      const note =
        'the work in a fresh process, its modules loaded first (`hopper check` as a command adds Node start-up and module loading: about 1 s through tsx on the development machine)';
      return [
        figure({
          name: 'check.wall_ms',
          label: `check: ${label}, wall time (baseline: list and read the folder)`,
          unit: 'ms',
          runs: results.check.map((run) => run.wallMs),
          baselineRuns: results.floor.map((run) => run.wallMs),
          goal: { on: 'ratio', op: '<=', limit: 2 },
          note,
        }),
        figure({
          name: 'check.cpu_ms',
          label: `check: ${label}, CPU (baseline: list and read the folder)`,
          unit: 'ms',
          runs: results.check.map((run) => run.cpuMs),
          baselineRuns: results.floor.map((run) => run.cpuMs),
        }),
      ];
    } finally {
      await rm(parent, { recursive: true, force: true });
    }
  },
};
