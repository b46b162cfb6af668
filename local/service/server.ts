/**
 * startSimulatedService: binds the API server and the file server, wires them to one
 * ServiceState, and returns the handle tests and local mode drive it with.
 */
import { createServer, type Server } from 'node:http';
import { persistState, ServiceState } from './domain/index.js';
import { createApiHandler, createFileHandler, type ServiceParts } from './endpoints/index.js';
import { RequestGate } from './faults/index.js';
import { InFlightGauge, listen, Signer, sleepUntil, stop } from './http/index.js';
import {
  DEFAULT_OPTIONS,
  validateOptions,
  type EndpointName,
  type FaultRule,
  type SimulatedServiceOptions,
} from './options.js';

/** A running simulated service: what tests and local mode drive it with (serviceHandle). */
export type SimulatedService = ReturnType<typeof serviceHandle>;

/** Knobs bound to the listening sockets or the clock: fixed once the service runs. */
const FIXED_KNOBS = ['host', 'port', 'filePort', 'manualClockStart'] as const;

/**
 * Starts the service; with `persistence`, its records are kept across restarts in `stateFile`
 * (read at start, kept up to date; persistence.ts).
 */
export async function startSimulatedService(
  partial: Partial<SimulatedServiceOptions> = {},
  persistence?: { readonly stateFile: string },
): Promise<SimulatedService> {
  const options: SimulatedServiceOptions = { ...DEFAULT_OPTIONS, ...partial };
  validateOptions(options);
  const state = new ServiceState(options);
  const persisted = persistence === undefined ? undefined : await persistState(state, persistence.stateFile);
  const closing = new AbortController();
  const parts: ServiceParts = {
    state,
    gate: new RequestGate(options),
    signer: new Signer(),
    uploadsInFlight: new InFlightGauge(),
    sleep: sleepUntil(closing.signal),
  };
  const apiServer = createServer(createApiHandler(parts));
  const fileServer = createServer(createFileHandler(parts));
  // A multi-GB upload or download may take longer than Node's default 5-minute request timeout.
  fileServer.requestTimeout = 0;
  const close = async (...servers: Server[]): Promise<void> => {
    closing.abort();
    await Promise.all(servers.map(stop));
    await persisted?.close();
  };
  // A server that cannot listen closes those that started before it.
  const listening = (server: Server, port: number, started: Server[]): Promise<string> =>
    listen(server, options.host, port).catch(async (error: unknown) => {
      await close(...started);
      throw error;
    });
  const apiUrl = await listening(apiServer, options.port, []);
  const fileUrl = await listening(fileServer, options.filePort, [apiServer]);
  parts.signer.origin = fileUrl;
  return serviceHandle(parts, apiUrl, fileUrl, () => close(apiServer, fileServer));
}

/** The handle tests and local mode drive a running service with. */
function serviceHandle(
  { state, gate, uploadsInFlight }: ServiceParts,
  apiUrl: string,
  fileUrl: string,
  close: () => Promise<void>,
) {
  return {
    /** base_url: origin of the API (every path starts with /v1). */
    apiUrl,
    /** Origin of the presigned upload and download URLs (another port). */
    fileUrl,
    /** The account's API key (follows configure({ apiKey })). */
    get apiKey(): string {
      return state.knobs.apiKey;
    },
    clock: state.clock,
    /** Changes knobs while running (not host, ports or the clock kind). Throws on a bad value. */
    configure(changes: Partial<SimulatedServiceOptions>): void {
      for (const knob of FIXED_KNOBS) {
        if (changes[knob] !== undefined && changes[knob] !== state.knobs[knob]) {
          throw new Error(`${knob} cannot change while the service runs`);
        }
      }
      validateOptions({ ...state.knobs, ...changes });
      state.configure(changes);
      gate.configure(changes, state.knobs);
    },
    /** Credits left now. */
    credits: (): number => state.credits(),
    /** Requests seen per endpoint, faulted and rate-limited ones included. */
    requestCount: (endpoint: EndpointName): number => gate.requestCount(endpoint),
    /** Fault rules fired so far, of one kind or of all (a garbled answer counts once). */
    faultCount: (kind?: FaultRule['kind']): number => gate.injector.firedCount(kind),
    /** Requests answered 429 by the maxRequestsPerSecond limit so far. */
    rateLimited: (): number => gate.rateLimit.limited(),
    /** A done model loses its files: 'refunded' (credit back, status refunded) or 'moved' (hf_repo set). */
    removeModelFiles: state.removeModelFiles.bind(state),
    /**
     * A dataset or model is gone, as if deleted by someone or purged after it expired: every
     * endpoint and presigned URL on it answers 404 not_found from now on. A model's credit stays
     * spent (or returned, if its training had failed); a dataset's models stay.
     */
    deleteRecord: state.deleteRecord.bind(state),
    /**
     * File uploads (PUTs to upload URLs) being served now, and the most at once since the start
     * or the last read with `reset`.
     */
    uploadsInFlight: (reset = false): { now: number; max: number } => uploadsInFlight.read(reset),
    /** Size and sha256 (hex) of the last complete upload of a dataset's file, if any. */
    fileDigest(datasetId: string, fileName: string): { bytes: number; sha256: string } | undefined {
      const upload = state.datasets.get(datasetId)?.files.find((file) => file.name === fileName)?.upload;
      return upload === undefined ? undefined : { bytes: upload.bytes, sha256: upload.sha256 };
    },
    /** Stops both servers and drops open connections. */
    close,
  };
}
