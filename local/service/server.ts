/**
 * startSimulatedService: binds the API server and the file server, wires them to one
 * ServiceState, and returns the handle tests and local mode drive it with.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApiHandler, createFileHandler } from './endpoints/index.js';
import { modelState } from './domain/models.js';
import {
  DEFAULT_OPTIONS,
  type EndpointName,
  type FaultRule,
  type SimulatedServiceOptions,
} from './options.js';
import type { Sleep } from './faults/pipeline.js';
import { persistState } from './domain/persistence.js';
import { ServiceState } from './domain/state.js';

export interface SimulatedService {
  /** base_url: origin of the API (every path starts with /v1). */
  readonly apiUrl: string;
  /** Origin of the presigned upload and download URLs (another port). */
  readonly fileUrl: string;
  /** The account's API key (follows configure({ apiKey })). */
  readonly apiKey: string;
  readonly clock: { now(): number; advance(ms: number): void };
  /** Changes knobs while running (not host, ports or the clock kind). Throws on a bad value. */
  configure(partial: Partial<SimulatedServiceOptions>): void;
  /** Credits left now. */
  credits(): number;
  /** Requests seen per endpoint, faulted and rate-limited ones included. */
  requestCount(endpoint: EndpointName): number;
  /** Fault rules fired so far, of one kind or of all (a garbled answer counts once). */
  faultCount(kind?: FaultRule['kind']): number;
  /** Requests answered 429 by the maxRequestsPerSecond limit so far. */
  rateLimited(): number;
  /** A done model loses its files: 'refunded' (credit back, status refunded) or 'moved' (hf_repo set). */
  removeModelFiles(modelId: string, how: 'refunded' | 'moved'): void;
  /**
   * A dataset or model is gone, as if deleted by someone or purged after it expired: every
   * endpoint and presigned URL on it answers 404 not_found from now on. A model's credit stays
   * spent (or returned, if its training had failed); a dataset's models stay.
   */
  deleteRecord(kind: 'dataset' | 'model', id: string): void;
  /**
   * File uploads (PUTs to upload URLs) being served now, and the most at once since the start
   * or the last read with `reset`.
   */
  uploadsInFlight(reset?: boolean): { now: number; max: number };
  /** Size and sha256 (hex) of the last complete upload of a dataset's file, if any. */
  fileDigest(datasetId: string, fileName: string): { bytes: number; sha256: string } | undefined;
  /** Stops both servers and drops open connections. */
  close(): Promise<void>;
}

export interface ServicePersistence {
  /** A file holding the records across restarts (read at start, kept up to date; persistence.ts). */
  readonly stateFile: string;
}

export async function startSimulatedService(
  partial: Partial<SimulatedServiceOptions> = {},
  persistence?: ServicePersistence,
): Promise<SimulatedService> {
  const options: SimulatedServiceOptions = { ...DEFAULT_OPTIONS, ...partial };
  const state = new ServiceState(options);
  const persisted = persistence === undefined ? undefined : await persistState(state, persistence.stateFile);
  const sleeps = new SleepRegistry();
  const apiServer = createServer(createApiHandler(state, sleeps.sleep));
  const fileServer = createServer(createFileHandler(state, sleeps.sleep));
  // A multi-GB upload or download may take longer than Node's default 5-minute request timeout.
  fileServer.requestTimeout = 0;

  let apiUrl: string;
  try {
    apiUrl = await listen(apiServer, options.host, options.port);
  } catch (error) {
    await persisted?.close();
    throw error;
  }
  let fileUrl: string;
  try {
    fileUrl = await listen(fileServer, options.host, options.filePort);
  } catch (error) {
    await stop(apiServer);
    await persisted?.close();
    throw error;
  }
  state.fileOrigin = fileUrl;

  return {
    apiUrl,
    fileUrl,
    get apiKey() {
      return state.knobs.apiKey;
    },
    clock: {
      now: () => state.clock.now(),
      advance: (ms) => {
        state.clock.advance(ms);
      },
    },
    configure: (changes) => {
      state.configure(changes);
    },
    credits: () => state.credits(),
    requestCount: (endpoint) => state.requestCount(endpoint),
    faultCount: (kind) => state.faults.firedCount(kind),
    rateLimited: () => state.rateLimit.limited(),
    removeModelFiles(modelId, how) {
      const model = state.models.get(modelId);
      if (model === undefined) throw new Error(`removeModelFiles: no model ${modelId}`);
      const now = state.now();
      const { nextAction } = modelState(model, now);
      if (nextAction !== 'download') {
        throw new Error(
          `removeModelFiles: model ${modelId} has no files to remove (next_action ${nextAction})`,
        );
      }
      model.removal = { how, at: now };
    },
    deleteRecord: (kind, id) => {
      state.deleteRecord(kind, id);
    },
    uploadsInFlight: (reset = false) => state.uploadsInFlight.read(reset),
    fileDigest(datasetId, fileName) {
      const upload = state.datasets.get(datasetId)?.files.find((file) => file.name === fileName)?.upload;
      return upload === undefined ? undefined : { bytes: upload.bytes, sha256: upload.sha256 };
    },
    async close() {
      sleeps.cancelAll();
      await Promise.all([stop(apiServer), stop(fileServer)]);
      await persisted?.close();
    },
  };
}

function listen(server: Server, host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const address = server.address() as AddressInfo;
      const shownHost = address.address.includes(':') ? `[${address.address}]` : address.address;
      resolve(`http://${shownHost}:${address.port}`);
    });
  });
}

function stop(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => {
      resolve();
    });
    server.closeAllConnections();
  });
}

/** Timers behind 'stall' faults; close() ends them so it never waits on a stalled answer. */
class SleepRegistry {
  private readonly pending = new Map<NodeJS.Timeout, () => void>();

  readonly sleep: Sleep = (ms) =>
    new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(timer);
        resolve();
      }, ms);
      this.pending.set(timer, resolve);
    });

  cancelAll(): void {
    for (const [timer, resolve] of this.pending) {
      clearTimeout(timer);
      resolve();
    }
    this.pending.clear();
  }
}
