/**
 * Everything the simulated service holds in memory: its knobs, clock, records, credits,
 * counters and signing key. The API and file servers both work on one ServiceState.
 */
import { createClock, type ServiceClock } from './clock.js';
import type { Dataset, DatasetFile } from './datasets.js';
import { FaultInjector } from '../faults/injector.js';
import { RequestRateLimit } from '../faults/rate-limit.js';
import { InFlightGauge } from '../http/in-flight.js';
import { creditReturned, type Model } from './models.js';
import { ENDPOINTS, validateOptions, type EndpointName, type SimulatedServiceOptions } from '../options.js';
import { mulberry32 } from './random.js';
import { Signer } from '../http/signing.js';

/** What ServiceState.records() gives and restore() takes. */
export interface ServiceRecords {
  readonly nextSeq: number;
  readonly creditBase: number;
  readonly datasets: readonly Dataset[];
  readonly models: readonly Model[];
}

/** Knobs bound to the listening sockets or the clock: fixed once the service runs. */
const FIXED_KNOBS = ['host', 'port', 'filePort', 'manualClockStart'] as const;

export class ServiceState {
  readonly clock: ServiceClock;
  readonly signer = new Signer();
  readonly faults: FaultInjector;
  /** The maxRequestsPerSecond knob at work. */
  readonly rateLimit = new RequestRateLimit();
  readonly datasets = new Map<string, Dataset>();
  readonly models = new Map<string, Model>();
  /** PUTs to upload URLs being served at once (files.ts). */
  readonly uploadsInFlight = new InFlightGauge();
  /** Origin of presigned URLs, known once the file server listens. */
  fileOrigin = '';
  private options: SimulatedServiceOptions;
  private nextSeq = 1;
  private readonly counts = new Map<EndpointName, number>(ENDPOINTS.map((name) => [name, 0]));
  /** credits() = creditBase - models created + credits returned so far. */
  private creditBase: number;

  constructor(options: SimulatedServiceOptions) {
    validateOptions(options);
    this.options = { ...options };
    this.clock = createClock(options.manualClockStart);
    this.faults = new FaultInjector(options.faults, mulberry32(options.seed));
    this.rateLimit.setLimit(options.maxRequestsPerSecond);
    this.creditBase = options.credits;
  }

  get knobs(): Readonly<SimulatedServiceOptions> {
    return this.options;
  }

  now(): number {
    return this.clock.now();
  }

  takeSeq(): number {
    return this.nextSeq++;
  }

  configure(partial: Partial<SimulatedServiceOptions>): void {
    for (const knob of FIXED_KNOBS) {
      if (partial[knob] !== undefined && partial[knob] !== this.options[knob]) {
        throw new Error(`${knob} cannot change while the service runs`);
      }
    }
    const next = { ...this.options, ...partial };
    validateOptions(next);
    this.options = next;
    if (partial.faults !== undefined) this.faults.setRules(next.faults);
    this.rateLimit.setLimit(next.maxRequestsPerSecond);
    if (partial.seed !== undefined) this.faults.setRandom(mulberry32(next.seed));
    if (partial.credits !== undefined) {
      // Make the balance read `credits` now; credits still owed (failures to come) arrive later.
      this.creditBase = partial.credits + this.models.size - this.creditsReturned(this.now());
    }
  }

  credits(now = this.now()): number {
    return this.creditBase - this.models.size + this.creditsReturned(now);
  }

  private creditsReturned(now: number): number {
    let returned = 0;
    for (const model of this.models.values()) if (creditReturned(model, now)) returned += 1;
    return returned;
  }

  /**
   * The records and the account's balance, as plain data (see persistence.ts): what a restart
   * needs to carry on. Knobs, counters, the clock and the signing key are not part of it.
   */
  records(): ServiceRecords {
    return {
      nextSeq: this.nextSeq,
      creditBase: this.creditBase,
      datasets: [...this.datasets.values()],
      models: [...this.models.values()],
    };
  }

  /** Takes the records of an earlier run of the service (before any request is served). */
  restore(records: ServiceRecords): void {
    this.nextSeq = records.nextSeq;
    this.creditBase = records.creditBase;
    this.datasets.clear();
    this.models.clear();
    for (const dataset of records.datasets) this.datasets.set(dataset.id, dataset);
    for (const model of records.models) this.models.set(model.id, model);
  }

  /**
   * The deleteRecord() test hook: the record is gone (deleted by someone, or purged after it
   * expired), so every endpoint and presigned URL on it answers 404 not_found from now on. A
   * dataset's models stay (their records outlive it); a model's credit stays as it stood: spent,
   * or returned if its training had failed.
   */
  deleteRecord(kind: 'dataset' | 'model', id: string): void {
    if (kind === 'dataset') {
      if (!this.datasets.delete(id)) throw new Error(`deleteRecord: no dataset ${id}`);
      return;
    }
    const model = this.models.get(id);
    if (model === undefined) throw new Error(`deleteRecord: no model ${id}`);
    // credits() counts models.size: keep the balance the same without this model.
    if (!creditReturned(model, this.now())) this.creditBase -= 1;
    this.models.delete(id);
  }

  count(endpoint: EndpointName): void {
    this.counts.set(endpoint, (this.counts.get(endpoint) ?? 0) + 1);
  }

  requestCount(endpoint: EndpointName): number {
    return this.counts.get(endpoint) ?? 0;
  }

  /** A fresh presigned upload URL for a pending file. */
  uploadLink(dataset: Dataset, file: DatasetFile, now: number): { url: string; expiresAt: number } {
    const expiresAt = now + this.options.uploadUrlTtlMs;
    const path = `/upload/${dataset.id}/${file.id}`;
    return { url: this.presign(path, expiresAt), expiresAt };
  }

  /** A presigned download URL, valid until `expiresAt`. */
  downloadLink(model: Model, expiresAt: number): string {
    return this.presign(`/download/${model.id}`, expiresAt);
  }

  private presign(path: string, expiresAt: number): string {
    const signature = this.signer.signBase64url(`${path}\n${expiresAt}`);
    return `${this.fileOrigin}${path}?expires=${expiresAt}&signature=${signature}`;
  }

  /** Whether `path` with these query values was presigned here (expiry checked separately). */
  verifyPresigned(path: string, expires: string | null, signature: string | null): number | undefined {
    if (expires === null || signature === null || !/^\d{1,16}$/.test(expires)) return undefined;
    return this.signer.verifyBase64url(`${path}\n${expires}`, signature) ? Number(expires) : undefined;
  }
}
