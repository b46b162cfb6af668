/**
 * A drop of many files: upload_files with its bounded concurrency against the same step sending
 * one file after another, for 1,000 small files and for 10 large ones, side by side in one run.
 * Also the most uploads the simulated service saw at once (the bound holds).
 *
 * Knobs: BENCH_SMALL_FILES (default 1000), BENCH_LARGE_FILE_MIB (default 100, 10 files).
 */
import { availableParallelism } from 'node:os';
import { UPLOAD_CONCURRENCY } from '../lambdas/steps/upload-files.js';
import { envInteger, MiB, sideBySide, type Benchmark } from './harness/benchmark.js';
import { figure, type Figure } from './harness/figures.js';
import { runClient, startServers } from './harness/processes.js';
import type { ClientResult } from './harness/protocol.js';

const MODULE = 'clients/many-files.ts';
const CORES = availableParallelism();
const SMALL_FILE_BYTES = 1024;
const LARGE_FILES = 10;

export const manyFiles: Benchmark = {
  name: 'many-files',
  title: `a drop of many files: ${String(UPLOAD_CONCURRENCY)} at a time vs one after another`,
  async run(context) {
    const smallCount = envInteger('BENCH_SMALL_FILES', 1000);
    const largeBytes = envInteger('BENCH_LARGE_FILE_MIB', 100) * MiB;
    const servers = await startServers({ heldOutCount: 0, readingMs: 0, credits: 10 });
    const { endpoints, s3, service } = servers;
    const call = (name: string, args: Record<string, unknown>) =>
      runClient({ module: MODULE, export: name, args: { ...endpoints, ...args } });
    try {
      const figures: Figure[] = [];
      for (const drop of [
        {
          name: 'small',
          label: `${String(smallCount)} files of 1 KiB`,
          count: smallCount,
          bytes: SMALL_FILE_BYTES,
        },
        {
          name: 'large',
          label: `${String(LARGE_FILES)} files of ${String(largeBytes / MiB)} MiB`,
          count: LARGE_FILES,
          bytes: largeBytes,
        },
      ]) {
        context.log(`many-files: putting ${drop.label} into the local S3`);
        const files = { drop: `many-${drop.name}`, count: drop.count, bytes: drop.bytes };
        await call('seedFiles', files);
        await service.request({ op: 'maxConcurrentUploads', reset: true });
        let maxSeen = 0;
        context.log(
          `many-files: ${String(context.runs)} rounds of ${drop.label}, one after another and ${String(UPLOAD_CONCURRENCY)} at a time`,
        );
        // The servers' CPU over each run (set-up included): on 2 cores, what bounds the speed-up.
        const withServerCpu = async (run: () => Promise<ClientResult>) => {
          const before = await Promise.all([s3.cpuMs(), service.cpuMs()]);
          const result = await run();
          const after = await Promise.all([s3.cpuMs(), service.cpuMs()]);
          const serverCpuMs = after[0] - before[0] + (after[1] - before[1]);
          context.log(
            `    servers' CPU ${(serverCpuMs / 1000).toFixed(2)} s (S3 ${((after[0] - before[0]) / 1000).toFixed(2)} s)`,
          );
          return { ...result, serverCpuMs };
        };
        const results = await sideBySide(
          context.runs,
          {
            sequential: () => withServerCpu(() => call('uploadMany', { ...files, concurrency: 1 })),
            concurrent: () =>
              withServerCpu(async () => {
                await service.request({ op: 'maxConcurrentUploads', reset: true });
                const result = await call('uploadMany', { ...files, concurrency: UPLOAD_CONCURRENCY });
                maxSeen = Math.max(maxSeen, await service.request<number>({ op: 'maxConcurrentUploads' }));
                return result;
              }),
          },
          context.log,
        );
        figures.push(
          figure({
            name: `many-files.${drop.name}.speedup`,
            label: `many files: ${drop.label}, speed-up over one after another`,
            unit: 'x',
            runs: results.concurrent.map(
              (run, index) => (results.sequential[index]?.wallMs ?? NaN) / run.wallMs,
            ),
            goal: drop.name === 'small' ? { on: 'value', op: '>=', limit: 4 } : undefined,
            note: `${String(UPLOAD_CONCURRENCY)} at a time; the most the service saw at once: ${String(maxSeen)}`,
          }),
          figure({
            name: `many-files.${drop.name}.cpu_bound_speedup`,
            label: `many files: ${drop.label}, the most speed-up this machine's CPU allows`,
            unit: 'x',
            // One after another's wall time over the least the side-by-side run could take: all
            // three processes' CPU spread over every core. Above this, no concurrency helps.
            runs: results.concurrent.map(
              (run, index) =>
                (results.sequential[index]?.wallMs ?? NaN) / ((run.cpuMs + run.serverCpuMs) / CORES),
            ),
            note: `${String(CORES)} cores shared by the client, the local S3 and the simulated service; other work on the machine lengthens one after another's wall time and so raises this ceiling`,
          }),
          figure({
            name: `many-files.${drop.name}.seconds`,
            label: `many files: ${drop.label}, upload_files (baseline: one after another)`,
            unit: 's',
            runs: results.concurrent.map((run) => run.wallMs / 1000),
            baselineRuns: results.sequential.map((run) => run.wallMs / 1000),
          }),
          figure({
            name: `many-files.${drop.name}.max_in_flight`,
            label: `many files: ${drop.label}, most uploads at the service at once`,
            unit: 'uploads',
            runs: [maxSeen],
            goal: { on: 'value', op: '<=', limit: UPLOAD_CONCURRENCY },
          }),
        );
      }
      return figures;
    } finally {
      await servers.close();
    }
  },
};
