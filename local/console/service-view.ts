/**
 * The simulated service's side of the runs, for the console: its newest datasets and models
 * with their step and next_action, and the credits left. Read through the service's own API
 * with Hopper's client (the key stays in this process; only the fields below leave it).
 */
import { TrainingServiceClient, type Dataset, type Model } from '../../lambdas/service-client/index.js';
import type { SimulatedService } from '../service/index.js';

/** The fields of a dataset or model the page is sent, in this order; a model's dataset and size follow. */
const SHOWN_FIELDS = ['id', 'name', 'status', 'step', 'next_action', 'created_at', 'error'] as const;

export type ServiceRecord = Pick<Dataset | Model, (typeof SHOWN_FIELDS)[number]> &
  Partial<Pick<Model, 'dataset_id' | 'onnx_bytes'>>;

/** What the console's page is sent of the simulated service. */
export interface ServiceSnapshot {
  /** The service's base URL. */
  readonly url: string;
  /** Credits left. */
  readonly credits: number;
  /** The newest datasets and models, newest first. */
  readonly datasets: readonly ServiceRecord[];
  readonly models: readonly ServiceRecord[];
}

/** How many of each the console shows (the newest). */
const SHOWN = 25;

export class ServiceView {
  readonly #client: TrainingServiceClient;

  constructor(private readonly simulated: SimulatedService) {
    this.#client = new TrainingServiceClient({
      baseUrl: simulated.apiUrl,
      apiKey: simulated.apiKey,
      maxRetries: 1,
      timeoutMs: 5_000,
    });
  }

  /** The service's URL, its credits left, and its newest datasets and models. */
  async snapshot(): Promise<ServiceSnapshot> {
    // The first page of each: the newest.
    const [datasets, models] = await Promise.all([
      this.#client.listDatasets({ limit: SHOWN }).pages().next(),
      this.#client.listModels({ limit: SHOWN }).pages().next(),
    ]);
    const common = (record: Dataset | Model): ServiceRecord =>
      Object.fromEntries(SHOWN_FIELDS.map((field) => [field, record[field]])) as ServiceRecord;
    return {
      url: this.simulated.apiUrl,
      credits: this.simulated.credits(),
      datasets: datasets.done ? [] : datasets.value.data.map(common),
      models: (models.done ? [] : models.value.data).map((model) => ({
        ...common(model),
        dataset_id: model.dataset_id,
        onnx_bytes: model.onnx_bytes,
      })),
    };
  }

  close(): Promise<void> {
    return this.#client.close();
  }
}
