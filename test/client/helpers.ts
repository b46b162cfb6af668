/**
 * Fixtures for the client's integration tests: simulated services and clients that are closed
 * after each test, a sleep that records instead of waiting, and a short way to a dataset at a
 * given point of the flow.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { afterEach } from 'vitest';
import {
  DEFAULT_OPTIONS,
  startSimulatedService,
  type SimulatedService,
  type SimulatedServiceOptions,
} from '../../local/service/index.js';
import {
  TrainingServiceClient,
  type Dataset,
  type TrainingServiceClientOptions,
} from '../../lambdas/service-client/index.js';
import { csv, SAMPLE_TEXTS } from '../helpers/fixtures.js';
import { listenOnLoopback } from '../helpers/loopback.js';

/** Every item of a list (a CursorList reads its pages as it goes), in an array. */
export async function allOf<T>(list: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of list) items.push(item);
  return items;
}

export const CLOCK_START = '2026-01-01T00:00:00.000Z';
export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;

/** Phases that end at once, on a manual clock: the flow moves only when a test says so. */
export const QUICK: Partial<SimulatedServiceOptions> = {
  manualClockStart: CLOCK_START,
  readingMs: 0,
  structuringMs: 0,
  queuedMs: 0,
  trainingMs: 0,
};

export interface RecordingSleep {
  readonly sleep: (ms: number) => Promise<void>;
  /** Every wait asked for, in ms. */
  readonly slept: number[];
}

/** A sleep that records the wait and returns on the next turn of the event loop. */
export function recordingSleep(): RecordingSleep {
  const slept: number[] = [];
  return {
    slept,
    sleep: (ms) => {
      slept.push(ms);
      return new Promise((resolve) => setImmediate(resolve));
    },
  };
}

export interface Fixtures {
  /** A fresh simulated service (QUICK unless overridden). */
  service(partial?: Partial<SimulatedServiceOptions>): Promise<SimulatedService>;
  /** A client of `service` with a recording sleep (no real waits between retries). */
  client(
    service: SimulatedService,
    overrides?: Partial<TrainingServiceClientOptions>,
  ): TrainingServiceClient & { readonly slept: number[] };
  /** A plain HTTP server on loopback answering with `handler`: for answers the service never gives. */
  stub(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string>;
}

/** Services and clients made through the returned fixtures are closed after each test. */
export function useFixtures(): Fixtures {
  const services: SimulatedService[] = [];
  const clients: TrainingServiceClient[] = [];
  const stubs: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await Promise.all(stubs.splice(0).map((close) => close()));
    await Promise.all(clients.splice(0).map((client) => client.close()));
    await Promise.all(services.splice(0).map((service) => service.close()));
  });
  return {
    async service(partial = {}) {
      const service = await startSimulatedService({ ...DEFAULT_OPTIONS, ...QUICK, ...partial });
      services.push(service);
      return service;
    },
    client(service, overrides = {}) {
      const { sleep, slept } = recordingSleep();
      const client = new TrainingServiceClient({
        baseUrl: service.apiUrl,
        apiKey: service.apiKey,
        timeoutMs: 5_000,
        sleep,
        ...overrides,
      });
      clients.push(client);
      return Object.assign(client, { slept });
    },
    async stub(handler) {
      const { url, close } = await listenOnLoopback(createServer(handler));
      stubs.push(close);
      return url;
    },
  };
}

/** A loopback URL where nothing listens (the port was free a moment ago): connections are refused. */
export async function refusingUrl(): Promise<string> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => {
    server.close(() => {
      resolve();
    });
  });
  return `http://127.0.0.1:${port}`;
}

/** The rejection of `promise` (fails the test if it resolves). */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

/** The error a stream ends with, after reading it whole (fails the test if it ends cleanly). */
export async function streamError(stream: Readable): Promise<unknown> {
  try {
    for await (const _chunk of stream) {
      // Drain.
    }
  } catch (error) {
    return error;
  }
  throw new Error('expected the stream to fail');
}

/** Creates a dataset of `files` and uploads and completes each. */
export async function uploadedDataset(
  client: TrainingServiceClient,
  files: Readonly<Record<string, string>> = { 'reviews.csv': csv(SAMPLE_TEXTS) },
  name = 'reviews',
): Promise<Dataset> {
  const created = await client.createDataset({
    name,
    files: Object.entries(files).map(([fileName, content]) => ({
      name: fileName,
      bytes: Buffer.byteLength(content),
    })),
  });
  let dataset = created;
  for (const file of created.files) {
    const content = files[file.name] ?? '';
    dataset = await client.uploadFile(created.id, file, () => Readable.from([Buffer.from(content)]));
  }
  return dataset;
}

/** A dataset at start_training: uploaded, structured, every held-out example labelled. */
export async function trainableDataset(client: TrainingServiceClient, name = 'reviews'): Promise<Dataset> {
  const uploaded = await uploadedDataset(client, undefined, name);
  await client.structure(uploaded.id);
  return labelAll(client, uploaded.id);
}

/** Answers every held-out example with its first choice; the dataset ends at start_training. */
export async function labelAll(client: TrainingServiceClient, datasetId: string): Promise<Dataset> {
  for (let i = 0; i < 100; i++) {
    const task = await client.nextLabelTask(datasetId);
    if (task === null) return client.getDataset(datasetId);
    await client.submitLabel(datasetId, task.task, task.choices[0]!);
  }
  throw new Error('labelling did not end');
}
