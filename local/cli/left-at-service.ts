/**
 * What a `hopper run` leaves at the training service when it is stopped (Ctrl-C, SIGTERM): local
 * mode ends with the command, but a dataset it created, and a training it started, stay at the
 * service; a training goes on and holds its credit. The service has no delete: datasets expire,
 * a done model's files expire. So the command says what is there, what it costs, and what to do;
 * and a later `hopper run` of the folder does not start a second training while that one is
 * still queued or training (underWayRefusal).
 */
import {
  leftAtServiceAdvice,
  leftModelCredit,
  trainingUnderWayMessage,
} from '../../lambdas/core/errors/index.js';
import { holdsCredit, isDatasetNamed, TRAINING_STATUSES } from '../../lambdas/service-client/index.js';
import type { Dataset, Model, TrainingServiceClient } from '../../lambdas/service-client/index.js';

/** Pages of a list read at most while looking (100 records each). */
const MAX_PAGES = 5;
const PAGE = 100;

export interface Leftovers {
  readonly datasets: readonly Dataset[];
  /** The models of those datasets, newest first. */
  readonly models: readonly Model[];
}

/**
 * The datasets this run created at the service and their models: those it knows by id, and those
 * named `datasetName` created since `since` (a dataset whose creation answer the stop cut off).
 */
export async function leftAtService(
  client: TrainingServiceClient,
  { datasetName, knownIds, since }: { datasetName: string; knownIds: readonly string[]; since: number },
): Promise<Leftovers> {
  const found = new Map<string, Dataset>();
  let pages = 0;
  for await (const page of client.listDatasets({ limit: PAGE }).pages()) {
    for (const dataset of page.data) {
      if (isDatasetNamed(dataset.name, datasetName) && Date.parse(dataset.created_at) >= since)
        found.set(dataset.id, dataset);
    }
    const oldest = page.data.at(-1);
    if (++pages >= MAX_PAGES || oldest === undefined || Date.parse(oldest.created_at) < since) break;
  }
  for (const id of knownIds) {
    if (!found.has(id)) found.set(id, await client.getDataset(id));
  }
  const datasets = [...found.values()];
  const models: Model[] = [];
  for (const dataset of datasets) {
    for await (const model of client.modelsOfDataset(dataset.id, { datasetCreatedAt: dataset.created_at })) {
      models.push(model);
    }
  }
  return { datasets, models };
}

/**
 * The lines `hopper run` prints when stopped: what is left at `serviceUrl`, and how to resume or
 * clean up.
 */
export function describeLeftovers(left: Leftovers, serviceUrl: string, folder: string): string[] {
  if (left.datasets.length === 0) {
    return [
      `hopper run: nothing was left at the training service (${serviceUrl}): no dataset was created yet`,
    ];
  }
  const lines = [`hopper run: left at the training service (${serviceUrl}):`];
  for (const dataset of left.datasets) {
    lines.push(
      `  dataset ${dataset.id} ("${dataset.name}", ${dataset.status}, next_action ${dataset.next_action}): kept by the service until it expires at ${dataset.expires_at}`,
    );
    for (const model of left.models.filter((candidate) => candidate.dataset_id === dataset.id)) {
      const credit = leftModelCredit(model);
      const files =
        model.status === 'done' && model.files_expire_at !== null
          ? `; its files stay at the service until ${model.files_expire_at}`
          : '';
      lines.push(`    model ${model.id} (${model.status}): ${credit}${files}`);
    }
  }
  // One per training that holds a credit (not failed, not refunded, its files not gone).
  const credits = left.models.filter((model) => holdsCredit(model.status, model.next_action)).length;
  const underWay = left.models.filter((model) => TRAINING_STATUSES.includes(model.status));
  lines.push(`  credits held: ${String(credits)}`);
  lines.push(`hopper run: ${leftAtServiceAdvice(folder, underWay, credits)}`);
  return lines;
}

/**
 * Why `hopper run` of a folder refuses to start, when a training of a dataset named `datasetName`
 * is still queued or training at `serviceUrl` (the newest is named): what an earlier, stopped
 * `hopper run` of the same folder left going. Null when there is none.
 */
export async function underWayRefusal(
  client: TrainingServiceClient,
  datasetName: string,
  serviceUrl: string,
): Promise<string | null> {
  const names = new Map<string, Dataset>();
  const found: Model[] = [];
  for (const status of TRAINING_STATUSES) {
    let pages = 0;
    for await (const page of client.listModels({ status, limit: PAGE }).pages()) {
      for (const model of page.data) {
        const dataset = names.get(model.dataset_id) ?? (await client.getDataset(model.dataset_id));
        names.set(dataset.id, dataset);
        if (isDatasetNamed(dataset.name, datasetName)) found.push(model);
      }
      if (++pages >= MAX_PAGES) break;
    }
  }
  const newest = found.sort((a, b) => b.created_at.localeCompare(a.created_at))[0];
  return newest === undefined ? null : trainingUnderWayMessage(datasetName, serviceUrl, newest);
}
