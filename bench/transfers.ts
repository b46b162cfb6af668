/**
 * The two large transfers, each against a plain pipe of the same bytes between the same
 * endpoints, in one run (servers in their own processes, each client in a fresh one):
 *   copy    download link -> S3 multipart (copy_model) vs the link's body piped into one PutObject;
 *   upload  S3 -> presigned PUT (upload_files) vs GetObject's body piped into the PUT.
 * Figures: throughput, client CPU per GiB, peak RSS growth at the large size, and how much more
 * that growth is than at the small size (flat memory: about none).
 *
 * Knobs: BENCH_TRANSFER_MIB (default 1024; 4096 for the 4 GiB check), BENCH_SMALL_MIB (256).
 */
import { envInteger, GiB, MiB, sideBySide, type Benchmark, type BenchContext } from './harness/benchmark.js';
import { figure, type Figure } from './harness/figures.js';
import { runClient, startServers } from './harness/processes.js';
import type { ClientResult } from './harness/protocol.js';

const MODULE = 'clients/transfers.ts';

interface Sized {
  readonly large: number;
  readonly small: number;
}

function sizes(): Sized {
  const large = envInteger('BENCH_TRANSFER_MIB', 1024) * MiB;
  const small = Math.min(large, envInteger('BENCH_SMALL_MIB', 256) * MiB);
  return { large, small };
}

const mibPerS = (bytes: number) => (run: ClientResult) => bytes / MiB / (run.wallMs / 1000);
const cpuPerGiB = (bytes: number) => (run: ClientResult) => run.cpuMs / 1000 / (bytes / GiB);
const growthMiB = (run: ClientResult) => run.rssGrowth / MiB;

interface PathResults {
  readonly hopper: ClientResult[];
  readonly pipe: ClientResult[];
  readonly hopperSmall: ClientResult[];
}

/** The four figures of one path (copy or upload). */
function pathFigures(
  path: 'copy' | 'upload',
  results: PathResults,
  size: Sized,
  speedGoal: number,
): Figure[] {
  const at = `${String(size.large / MiB)} MiB`;
  return [
    figure({
      name: `${path}.throughput`,
      label: `${path}: throughput at ${at} (baseline: plain pipe)`,
      unit: 'MiB/s',
      runs: results.hopper.map(mibPerS(size.large)),
      baselineRuns: results.pipe.map(mibPerS(size.large)),
      goal: { on: 'ratio', op: '>=', limit: speedGoal },
    }),
    figure({
      name: `${path}.cpu_per_gib`,
      label: `${path}: client CPU per GiB (baseline: plain pipe)`,
      unit: 's/GiB',
      runs: results.hopper.map(cpuPerGiB(size.large)),
      baselineRuns: results.pipe.map(cpuPerGiB(size.large)),
      goal: { on: 'ratio', op: '<=', limit: 1.5 },
    }),
    figure({
      name: `${path}.memory_growth`,
      label: `${path}: peak RSS growth at ${at} (baseline: plain pipe)`,
      unit: 'MiB',
      runs: results.hopper.map(growthMiB),
      baselineRuns: results.pipe.map(growthMiB),
      goal: { on: 'value', op: '<=', limit: 64 },
    }),
    figure({
      name: `${path}.memory_flat`,
      label: `${path}: RSS growth at ${at} minus at ${String(size.small / MiB)} MiB`,
      unit: 'MiB',
      runs: results.hopper.map((run, index) => growthMiB(run) - growthMiB(results.hopperSmall[index] ?? run)),
      goal: { on: 'value', op: '<=', limit: 16 },
      note: 'flat memory: the growth does not rise with the size',
    }),
  ];
}

export const transfers: Benchmark = {
  name: 'transfers',
  title: 'model copy (service -> S3) and data upload (S3 -> service) vs plain pipes',
  async run(context: BenchContext) {
    const size = sizes();
    const servers = await startServers({
      heldOutCount: 0,
      readingMs: 0,
      structuringMs: 0,
      queuedMs: 0,
      trainingMs: 0,
      credits: 100_000,
      modelBytes: size.large,
    });
    const { endpoints, service } = servers;
    let drops = 0;
    const call = (name: string, extra: Record<string, unknown> = {}) =>
      runClient({
        module: MODULE,
        export: name,
        args: { ...endpoints, drop: `bench-${String(++drops)}`, ...extra },
      });
    try {
      const modelBytes = (bytes: number) =>
        service.request({ op: 'configure', changes: { modelBytes: bytes } });
      context.log(
        `copy: ${String(context.runs)} rounds of plain pipe and copy_model at ${String(size.large / MiB)} MiB`,
      );
      const copy = await sideBySide(
        context.runs,
        {
          pipe: () => call('pipeCopy'),
          hopper: () => call('hopperCopy'),
        },
        context.log,
      );
      await modelBytes(size.small);
      context.log(`copy: copy_model at ${String(size.small / MiB)} MiB`);
      const copySmall = await sideBySide(context.runs, { hopper: () => call('hopperCopy') }, context.log);

      context.log('upload: putting the data files into the local S3');
      await call('seedDataFile', { drop: 'upload-large', bytes: size.large });
      await call('seedDataFile', { drop: 'upload-small', bytes: size.small });
      context.log(
        `upload: ${String(context.runs)} rounds of plain pipe and upload_files at ${String(size.large / MiB)} MiB`,
      );
      const large = { drop: 'upload-large', bytes: size.large };
      const upload = await sideBySide(
        context.runs,
        {
          pipe: () => call('pipeUpload', large),
          hopper: () => call('hopperUpload', large),
        },
        context.log,
      );
      context.log(`upload: upload_files at ${String(size.small / MiB)} MiB`);
      const uploadSmall = await sideBySide(
        context.runs,
        {
          hopper: () => call('hopperUpload', { drop: 'upload-small', bytes: size.small }),
        },
        context.log,
      );
      return [
        ...pathFigures('copy', { ...copy, hopperSmall: copySmall.hopper }, size, 0.8),
        ...pathFigures('upload', { ...upload, hopperSmall: uploadSmall.hopper }, size, 0.95),
      ];
    } finally {
      await servers.close();
    }
  },
};
