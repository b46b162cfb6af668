/**
 * `hopper models`: the training service's models, newest first, read page by page with the
 * service's cursor (the client's CursorList) and only as far as the listing needs: --limit
 * records, or every page with --all. With --drop: the drop's models in the bucket instead
 * (models/<drop>/<model id>/model.json), oldest to newest, with their metrics, the change from
 * the previous model, and which is current (models/<drop>/current.json; lambdas/steps/lineage.ts).
 */
import { LIST_LIMIT_MAX, MODEL_STATUSES } from '../../lambdas/service-client/contract.js';
import { NotFoundError, TrainingServiceClient, type Model } from '../../lambdas/service-client/index.js';
import { isModelDocument } from '../../lambdas/steps/lineage.js';
import { currentModelKey, MODELS_PREFIX } from '../../lambdas/storage/keys.js';
import { objectsUnder, readJson } from '../../lambdas/storage/objects.js';
import { CliUsageError, CommandError, EXIT, json, limitFlag, table, type CommandSpec } from './command.js';
import { targetCommand, TARGET_FLAGS, type Target } from './target.js';

export const DEFAULT_MODELS = 25;
export const MAX_MODELS = 1000;

export const MODELS_SPEC: CommandSpec = {
  name: 'models',
  usage: '[options]',
  about:
    "Lists the training service's models, newest first: id, name, status, step, next_action, dataset and when each was created. Reads the service's pages one at a time, only as many as the listing needs. The service's URL and API key come from the stack (its TrainingServiceUrl output and API key secret) or from `hopper local`'s settings (HOPPER_SERVICE_URL; HOPPER_API_KEY for a service other than the simulated one).",
  flags: {
    limit: limitFlag('models', DEFAULT_MODELS, MAX_MODELS),
    all: { help: 'every model, page after page' },
    status: {
      value: 'S',
      choices: MODEL_STATUSES,
      help: `models with this status only (${MODEL_STATUSES.join(', ')})`,
    },
    dataset: { value: 'ID', help: 'models of this dataset only' },
    drop: {
      value: 'DROP',
      help: "the drop's models in the bucket instead, oldest to newest: metrics, change from the previous model, the current one",
    },
    ...TARGET_FLAGS,
  },
  positionals: {
    min: 0,
    max: 0,
    what: 'arguments',
    hint: 'filter with --status and --dataset, or give --drop',
  },
  exits: { 0: true, 1: true, 2: true },
};

export const runModelsCommand = targetCommand(MODELS_SPEC, async (args, target, out) => {
  const all = args.on('all');
  const given = args.number('limit');
  if (all && given !== undefined) throw new CliUsageError('give --limit N or --all, not both');
  const limit = all ? Infinity : (given ?? DEFAULT_MODELS);
  const status = args.text('status');
  const dataset = args.text('dataset');
  const drop = args.text('drop');
  if (drop !== undefined) {
    if (status !== undefined || dataset !== undefined)
      throw new CliUsageError('give --drop without --status and --dataset');
    const models = (await dropModels(target, drop)).slice(-limit);
    if (models.length === 0)
      throw new CommandError('not_found', `${target.label} has no model of "${drop}" in its bucket`);
    out.stdout.write(args.on('json') ? json(models) : dropModelsTable(models));
    return EXIT.succeeded;
  }

  const { url, apiKey } = await target.service();
  // A command a person waits for: fewer retries than a pipeline step.
  const client = new TrainingServiceClient({ baseUrl: url, apiKey, maxRetries: 2, timeoutMs: 15_000 });
  try {
    const models: Model[] = [];
    for await (const model of modelList(client, { status, dataset, limit })) {
      models.push(model);
      if (models.length >= limit) break;
    }
    if (args.on('json')) out.stdout.write(json(models));
    else if (models.length === 0) out.stdout.write(`no models at the training service (${target.label})\n`);
    else out.stdout.write(modelsTable(models));
    return EXIT.succeeded;
  } finally {
    await client.close();
  }
});

/** The models asked for, newest first, as an iterator that fetches pages only when read. */
async function* modelList(
  client: TrainingServiceClient,
  { status, dataset: id, limit }: { status: string | undefined; dataset: string | undefined; limit: number },
): AsyncGenerator<Model> {
  if (id === undefined) {
    yield* client.listModels({ limit: Math.min(LIST_LIMIT_MAX, limit), status });
    return;
  }
  const dataset = await client.getDataset(id).catch((error: unknown) => {
    if (!(error instanceof NotFoundError)) throw error;
    throw new CommandError('not_found', `the training service has no dataset ${id}: check --dataset`);
  });
  // The service cannot filter by dataset: paging stops at models older than the dataset.
  for await (const model of client.modelsOfDataset(id, { datasetCreatedAt: dataset.created_at })) {
    if (status === undefined || model.status === status) yield model;
  }
}

/** The listing's columns: each header and the model's field under it. */
const MODEL_COLUMNS = {
  MODEL: 'id',
  NAME: 'name',
  STATUS: 'status',
  STEP: 'step',
  NEXT_ACTION: 'next_action',
  DATASET: 'dataset_id',
  CREATED: 'created_at',
} as const satisfies Record<string, keyof Model>;

function modelsTable(models: readonly Model[]): string {
  const fields = Object.values(MODEL_COLUMNS);
  return table(
    Object.keys(MODEL_COLUMNS),
    models.map((model) => fields.map((field) => String(model[field]))),
  );
}

/** A model of a drop as `hopper models --drop` lists it (its --json). */
export interface DropModel {
  readonly model_id: string;
  readonly encoder: string;
  readonly created_at: string;
  readonly run_id: string;
  readonly metrics: Readonly<Record<string, unknown>>;
  /** Whether models/<drop>/current.json names it. */
  readonly current: boolean;
  /** The model it was compared with when its run ended, and its metrics minus that one's. */
  readonly previous_model_id: string | null;
  readonly differences: Readonly<Record<string, number>> | null;
}

/** The drop's models in the bucket, oldest to newest (by the service's created_at), and which is current. */
async function dropModels({ s3, bucket }: Target, drop: string): Promise<DropModel[]> {
  const current = (await readJson(s3, bucket, currentModelKey(drop)))?.value as
    { model_id?: unknown } | undefined;
  const models: DropModel[] = [];
  for await (const { Key: key = '' } of objectsUnder(s3, bucket, `${MODELS_PREFIX}${drop}/`)) {
    const record = key.endsWith('/model.json') ? (await readJson(s3, bucket, key))?.value : undefined;
    if (!isModelDocument(record)) continue;
    const { id, encoder, created_at, metrics } = record.model;
    const { model_id: previous = null, differences = null } = record.previous ?? {};
    models.push({
      model_id: id,
      encoder,
      created_at,
      run_id: record.run.run_id,
      metrics: metrics ?? {},
      current: current?.model_id === id,
      previous_model_id: previous,
      differences,
    });
  }
  return models.sort((a, b) => a.created_at.localeCompare(b.created_at));
}

function dropModelsTable(models: readonly DropModel[]): string {
  const listed = (values: Readonly<Record<string, unknown>> | null, sign = false): string =>
    Object.entries(values ?? {})
      .map(([name, value]) => `${name} ${sign && Number(value) >= 0 ? '+' : ''}${String(value)}`)
      .join(', ');
  return table(
    ['MODEL', 'ENCODER', 'CREATED', 'METRICS', 'CHANGE', 'VS', 'CURRENT'],
    models.map((model) => [
      model.model_id,
      model.encoder,
      model.created_at,
      listed(model.metrics),
      listed(model.differences, true),
      model.previous_model_id ?? '',
      model.current ? 'yes' : '',
    ]),
  );
}
