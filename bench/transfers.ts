/**
 * The two large transfers, each against baselines of the same bytes between the same endpoints,
 * in one run (servers in their own processes, each client in a fresh one):
 *   copy    download link -> S3 multipart (copy_model) vs the same S3 work done bare (the link's
 *           body sent as a multipart upload of the same part size, no SDK), and vs the link's body
 *           piped into one PutObject, which spares the local S3 a multipart upload's own cost;
 *   upload  S3 -> presigned PUT (upload_files) vs GetObject's body piped into the PUT.
 * Figures: throughput, client CPU per GiB, peak RSS growth at the large size, and how much more
 * that growth is than at the small size (flat memory: about none); for the copy also the local
 * S3's CPU per GiB of the bare multipart upload against the single PUT.
 *
 * A round whose baseline ran more than OUTLIER_FACTOR (1.5) times slower or faster than the
 * median of that baseline's rounds is left out of the figures against it (outlyingRounds in
 * harness/figures.ts; results.json keeps its runs and lists it under `discarded`).
 *
 * Knobs: BENCH_TRANSFER_MIB (default 1024; 4096 for the 4 GiB check), BENCH_SMALL_MIB (256).
 */
import { envInteger, GiB, MiB, sideBySide, type Benchmark, type BenchContext } from './harness/benchmark.js';
import { figure, outlyingRounds, type Figure } from './harness/figures.js';
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
/** The local S3's CPU over a client's run (recorded by withS3Cpu), per GiB moved. */
const s3CpuPerGiB = (bytes: number) => (run: ClientResult) => Number(run.s3CpuMs) / 1000 / (bytes / GiB);

interface PathResults {
  readonly hopper: ClientResult[];
  readonly pipe: ClientResult[];
  readonly hopperSmall: ClientResult[];
}

/** The figures of one path (copy or upload) against its plain pipe. */
function pathFigures(
  path: 'copy' | 'upload',
  results: PathResults,
  size: Sized,
  speedGoal: number,
  pipeLabel: string,
): Figure[] {
  const at = `${String(size.large / MiB)} MiB`;
  const discard = outlyingRounds(results.pipe.map(mibPerS(size.large)));
  return [
    figure({
      name: `${path}.throughput`,
      label: `${path}: throughput at ${at} (baseline: ${pipeLabel})`,
      unit: 'MiB/s',
      runs: results.hopper.map(mibPerS(size.large)),
      baselineRuns: results.pipe.map(mibPerS(size.large)),
      discard,
      goal: { on: 'ratio', op: '>=', limit: speedGoal },
    }),
    figure({
      name: `${path}.cpu_per_gib`,
      label: `${path}: client CPU per GiB (baseline: ${pipeLabel})`,
      unit: 's/GiB',
      runs: results.hopper.map(cpuPerGiB(size.large)),
      baselineRuns: results.pipe.map(cpuPerGiB(size.large)),
      discard,
      goal: { on: 'ratio', op: '<=', limit: 1.5 },
    }),
    figure({
      name: `${path}.memory_growth`,
      label: `${path}: peak RSS growth at ${at} (baseline: ${pipeLabel})`,
      unit: 'MiB',
      runs: results.hopper.map(growthMiB),
      baselineRuns: results.pipe.map(growthMiB),
      discard,
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

/**
 * The copy against the same S3 work done bare (goal: 0.9 of its speed), and what that work costs
 * the local S3 against a single PutObject of the same bytes (why the pipe is the faster baseline).
 */
function multipartFigures(
  copy: { hopper: ClientResult[]; bare: ClientResult[]; pipe: ClientResult[] },
  size: Sized,
) {
  const bare = copy.bare.map(mibPerS(size.large));
  return [
    figure({
      name: 'copy.multipart_throughput',
      label: `copy: throughput at ${String(size.large / MiB)} MiB (baseline: bare multipart upload, same part size)`,
      unit: 'MiB/s',
      runs: copy.hopper.map(mibPerS(size.large)),
      baselineRuns: bare,
      discard: outlyingRounds(bare),
      goal: { on: 'ratio', op: '>=', limit: 0.9 },
    }),
    figure({
      name: 'copy.local_s3_multipart_cpu',
      label: 'local S3: CPU per GiB of the bare multipart upload (baseline: one streamed PutObject)',
      unit: 's/GiB',
      runs: copy.bare.map(s3CpuPerGiB(size.large)),
      baselineRuns: copy.pipe.map(s3CpuPerGiB(size.large)),
      discard: [...new Set([...outlyingRounds(bare), ...outlyingRounds(copy.pipe.map(mibPerS(size.large)))])],
      note: "the local S3's own cost of a multipart upload (parts, their digests, completion) against one PUT",
    }),
  ];
}

export const transfers: Benchmark = {
  name: 'transfers',
  title:
    'model copy (service -> S3) vs a bare multipart upload and a plain pipe; data upload (S3 -> service) vs a plain pipe',
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
    const { endpoints, service, s3 } = servers;
    let drops = 0;
    const call = (name: string, extra: Record<string, unknown> = {}) =>
      runClient({
        module: MODULE,
        export: name,
        args: { ...endpoints, drop: `bench-${String(++drops)}`, ...extra },
      });
    // The local S3's CPU over a whole client run (its set-up makes no S3 request but the size check).
    const withS3Cpu = async (name: string): Promise<ClientResult> => {
      const before = await s3.cpuMs();
      const result = await call(name);
      return { ...result, s3CpuMs: (await s3.cpuMs()) - before };
    };
    try {
      const modelBytes = (bytes: number) =>
        service.request({ op: 'configure', changes: { modelBytes: bytes } });
      context.log(
        `copy: ${String(context.runs)} rounds of plain pipe, bare multipart and copy_model at ${String(size.large / MiB)} MiB`,
      );
      const copy = await sideBySide(
        context.runs,
        {
          pipe: () => withS3Cpu('pipeCopy'),
          bare: () => withS3Cpu('bareMultipartCopy'),
          hopper: () => withS3Cpu('hopperCopy'),
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
        ...multipartFigures(copy, size),
        ...pathFigures(
          'copy',
          { ...copy, hopperSmall: copySmall.hopper },
          size,
          0.8,
          'one streamed PutObject',
        ),
        ...pathFigures('upload', { ...upload, hopperSmall: uploadSmall.hopper }, size, 0.95, 'plain pipe'),
      ];
    } finally {
      await servers.close();
    }
  },
};
