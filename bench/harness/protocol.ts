/** The messages between the benchmark runner and its child processes (processes.ts, child.ts). */

export type ServerKind = 's3' | 'service';

export interface ServerInfo {
  s3: { endpoint: string; bucket: string };
  service: { apiUrl: string; fileUrl: string; apiKey: string };
}

export type ServerRequest =
  | { op: 'cpu' }
  /** The simulated service's knobs (configure()). */
  | { op: 'configure'; changes: Record<string, unknown> }
  | { op: 'requestCount'; endpoint: string }
  /** Requests answered 429 by the service's rate limit (maxRequestsPerSecond). */
  | { op: 'rateLimited' }
  /** Credits left. */
  | { op: 'credits' }
  /** Most uploads to the file endpoint seen at once since the last reset. */
  | { op: 'maxConcurrentUploads'; reset?: boolean };

/** A measured client: `export` of `module` (a path relative to bench/) called with `args`. */
export interface ClientCall {
  readonly module: string;
  readonly export: string;
  readonly args: Record<string, unknown>;
}

/** What measure() records around the measured work of a client. */
export interface Measurement {
  readonly wallMs: number;
  /** User + system CPU of the client process while the work ran. */
  readonly cpuMs: number;
  /** Peak RSS while the work ran, over the RSS just before it, in bytes (sampled every 25 ms). */
  readonly rssGrowth: number;
}

export type ClientResult = Measurement & Readonly<Record<string, unknown>>;

/** The helper a client function gets: runs `work` and measures it. */
export type Measure = <T>(work: () => Promise<T>) => Promise<{ result: T; measurement: Measurement }>;

export type ClientFunction = (args: Record<string, unknown>, measure: Measure) => Promise<ClientResult>;
