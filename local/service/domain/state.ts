/**
 * Everything the simulated service holds about its account: its knobs, clock, records and
 * credits. The API and file servers both work on one ServiceState.
 */
import type { SimulatedServiceOptions } from '../options.js';
import { createClock, type ServiceClock } from './clock.js';
import type { Dataset } from './datasets.js';
import { creditReturned, modelState, type Model } from './models.js';

/** What ServiceState.records() gives and restore() takes. */
export interface ServiceRecords {
  readonly nextSeq: number;
  readonly creditBase: number;
  readonly datasets: readonly Dataset[];
  readonly models: readonly Model[];
}

export class ServiceState {
  readonly clock: ServiceClock;
  readonly datasets = new Map<string, Dataset>();
  readonly models = new Map<string, Model>();
  private options: SimulatedServiceOptions;
  private nextSeq = 1;
  /** credits() = creditBase - models created + credits returned so far. */
  private creditBase: number;

  /** `options` have passed validateOptions (the service checks every knob before it gets here). */
  constructor(options: SimulatedServiceOptions) {
    this.options = { ...options };
    this.clock = createClock(options.manualClockStart);
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

  /** Takes knobs that have passed validateOptions. */
  configure(partial: Partial<SimulatedServiceOptions>): void {
    this.options = { ...this.options, ...partial };
    if (partial.credits !== undefined) {
      // Make the balance read `credits` now; credits still owed (failures to come) arrive later.
      this.creditBase = partial.credits + this.models.size - this.creditsReturned(this.now());
    }
  }

  credits(now = this.now()): number {
    return this.creditBase - this.models.size + this.creditsReturned(now);
  }

  private creditsReturned(now: number): number {
    return [...this.models.values()].filter((model) => creditReturned(model, now)).length;
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

  /** The removeModelFiles() test hook: a done model loses its files, refunded or moved. */
  removeModelFiles(modelId: string, how: 'refunded' | 'moved'): void {
    const model = this.models.get(modelId);
    if (model === undefined) throw new Error(`removeModelFiles: no model ${modelId}`);
    const now = this.now();
    const { nextAction } = modelState(model, now);
    if (nextAction !== 'download') {
      throw new Error(
        `removeModelFiles: model ${modelId} has no files to remove (next_action ${nextAction})`,
      );
    }
    model.removal = { how, at: now };
  }
}
