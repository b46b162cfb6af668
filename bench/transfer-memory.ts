/**
 * Memory of the client's streaming transfers against file size, measured side by side in one
 * run: a streamed upload and a streamed download at two sizes, and a buffered download (the
 * whole body read into memory) as the baseline. Streaming holds when its peak memory stays a
 * small, flat amount as the file grows 8x (peak / file size near 0), while the buffered
 * baseline grows with the file (near 1 or more). Client and simulated service share the process,
 * so the figures include the service's side of each transfer. The peak includes garbage not yet
 * collected, whose amount varies with the Node version; "held after" (heap and buffers after a
 * full GC) shows whether a transfer kept anything.
 *
 *   npm run bench:transfer
 */
import { Readable } from 'node:stream';
import { request } from 'undici';
import { TrainingServiceClient } from '../lambdas/service-client/index.js';
import { startSimulatedService, type SimulatedService } from '../local/service/index.js';
import { gc, jsonlSource, measure, type Growth } from './memory.js';

const MiB = 1024 * 1024;
const SMALL = 32 * MiB;
const LARGE = 256 * MiB;

async function streamedUpload(client: TrainingServiceClient, bytes: number): Promise<void> {
  const dataset = await client.createDataset({ name: 'bench', files: [{ name: 'data.jsonl', bytes }] });
  await client.uploadFile(dataset.id, dataset.files[0]!, () => jsonlSource(bytes));
}

async function trainedModel(service: SimulatedService, client: TrainingServiceClient, bytes: number) {
  service.configure({ modelBytes: bytes });
  const dataset = await client.createDataset({ name: 'm', files: [{ name: 'd.jsonl', bytes: 13 }] });
  await client.uploadFile(dataset.id, dataset.files[0]!, () =>
    Readable.from([Buffer.from('{"text":"a"}\n')]),
  );
  await client.structure(dataset.id);
  const model = await client.startTraining(dataset.id, (await client.defaultEncoder()).id);
  return client.getModel(model.id);
}

async function streamedDownload(service: SimulatedService, client: TrainingServiceClient, bytes: number) {
  const model = await trainedModel(service, client, bytes);
  let received = 0;
  for await (const chunk of client.downloadModel(model.id, { expectedBytes: bytes })) {
    received += (chunk as Buffer).length;
  }
  if (received !== bytes) throw new Error(`downloaded ${received} of ${bytes} bytes`);
}

async function bufferedDownload(service: SimulatedService, client: TrainingServiceClient, bytes: number) {
  const model = await trainedModel(service, client, bytes);
  const link = await client.getDownloadLink(model.id);
  const body = Buffer.from(await (await request(link.url)).body.arrayBuffer());
  if (body.length !== bytes) throw new Error(`downloaded ${body.length} of ${bytes} bytes`);
}

const service = await startSimulatedService({
  heldOutCount: 0,
  readingMs: 0,
  structuringMs: 0,
  queuedMs: 0,
  trainingMs: 0,
  credits: 100,
});
const client = new TrainingServiceClient({ baseUrl: service.apiUrl, apiKey: service.apiKey });
try {
  if (gc === undefined) console.log('(run with node --expose-gc for steadier numbers)');
  // Warm up code paths so the first measurement does not pay for JIT and pools.
  await streamedUpload(client, 4 * MiB);
  await streamedDownload(service, client, 4 * MiB);

  const rows: [string, Growth, Growth][] = [];
  for (const [name, run] of [
    ['streamed upload', (bytes: number) => streamedUpload(client, bytes)],
    ['streamed download', (bytes: number) => streamedDownload(service, client, bytes)],
    ['buffered download (baseline)', (bytes: number) => bufferedDownload(service, client, bytes)],
  ] as const) {
    const small = await measure(() => run(SMALL));
    const large = await measure(() => run(LARGE));
    rows.push([name, small, large]);
  }
  const mib = (n: number) => `${(n / MiB).toFixed(1)} MiB`.padStart(12);
  console.log(
    `Node ${process.version}; peak RSS growth while the transfer runs, and what is still held after a GC`,
  );
  console.log(
    `${''.padEnd(30)}${'peak 32 MiB'.padStart(12)}${'peak 256 MiB'.padStart(14)}  ${'held after'.padStart(12)}  peak / size`,
  );
  for (const [name, small, large] of rows) {
    console.log(
      `${name.padEnd(30)}${mib(small.peak)}  ${mib(large.peak)}  ${mib(large.retained)}  ${(large.peak / LARGE).toFixed(3)}`,
    );
  }
  const buffered = rows[2]![2].peak;
  console.log(
    `ratio streamed / buffered peak at 256 MiB: upload ${(rows[0]![2].peak / buffered).toFixed(3)}, ` +
      `download ${(rows[1]![2].peak / buffered).toFixed(3)}`,
  );
} finally {
  await client.close();
  await service.close();
}
