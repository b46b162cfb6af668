/**
 * What must hold after any crash point, once the advice Hopper printed was followed: read from
 * the bucket (status/<drop>.json, the run records under status/.runs/<drop>/, models/<drop>/) and
 * from the simulated service (its datasets, models and credits), never from Hopper's own memory.
 */
import { GetObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { readStatus, type RunStatus } from '../../../lambdas/records/status/index.js';
import { modelFileKey, runRecordsPrefix, MODELS_PREFIX } from '../../../lambdas/storage/keys.js';
import { modelBytesAt, type SimulatedService } from '../../../local/service/index.js';

export interface ServiceDataset {
  readonly id: string;
  readonly status: string;
}
export interface ServiceModel {
  readonly id: string;
  readonly dataset_id: string;
  readonly status: string;
  readonly next_action: string;
  readonly onnx_bytes: number | null;
}

/** The service's records, and what the bucket says of the drop. */
export interface World {
  readonly datasets: readonly ServiceDataset[];
  readonly models: readonly ServiceModel[];
  readonly creditsSpent: number;
  readonly status: RunStatus | null;
  /** status/<drop>.json, the drop's run records and its model.json files, as text. */
  readonly reports: string;
}

export interface Bucket {
  readonly client: S3Client;
  readonly bucket: string;
}

export async function worldOf(
  service: SimulatedService,
  s3: Bucket,
  drop: string,
  creditsAtStart: number,
): Promise<World> {
  const list = async <T>(what: 'datasets' | 'models'): Promise<T[]> => {
    const answer = await fetch(`${service.apiUrl}/v1/${what}?limit=100`, {
      headers: { authorization: `Bearer ${service.apiKey}` },
    });
    return ((await answer.json()) as { data: T[] }).data;
  };
  const keys = [
    `status/${drop}.json`,
    ...(await keysUnder(s3, runRecordsPrefix(drop))),
    ...(await keysUnder(s3, `${MODELS_PREFIX}${drop}/`)).filter((key) => key.endsWith('/model.json')),
  ];
  const texts = await Promise.all(keys.map((key) => textOf(s3, key)));
  return {
    datasets: await list<ServiceDataset>('datasets'),
    models: await list<ServiceModel>('models'),
    creditsSpent: creditsAtStart - service.credits(),
    status: await readStatus(s3.client, s3.bucket, drop),
    reports: texts.join('\n'),
  };
}

/** Every record at the service is named by a status, a run record or a model.json of the drop. */
export function orphans(world: World): string[] {
  const named = (id: string): boolean => world.reports.includes(id);
  return [
    ...world.datasets
      .filter((dataset) => !named(dataset.id))
      .map(
        (dataset) => `orphan: dataset ${dataset.id} (${dataset.status}) is named by no status or run record`,
      ),
    ...world.models
      .filter((model) => !named(model.id))
      .map(
        (model) =>
          `orphan: model ${model.id} (${model.status}) is named by no status, run record or model.json`,
      ),
  ];
}

/** At most `allowed` credits spent. */
export function creditsWithin(world: World, allowed: number, why: string): string[] {
  if (world.creditsSpent <= allowed) return [];
  return [`credits: ${String(world.creditsSpent)} spent, at most ${String(allowed)} allowed (${why})`];
}

/** Every done model at the service is in models/<drop>/<id>/model.onnx, byte for byte. */
export async function modelsCopied(world: World, s3: Bucket, drop: string): Promise<string[]> {
  const problems: string[] = [];
  for (const model of world.models) {
    if (model.status === 'queued' || model.status === 'training') {
      problems.push(`model: ${model.id} still ${model.status} at the service when everything ended`);
    }
    if (model.status !== 'done' || model.onnx_bytes === null) continue;
    const bytes = await bytesOf(s3, modelFileKey(drop, model.id));
    if (bytes === null)
      problems.push(`model: ${model.id} is done at the service, not copied into the bucket`);
    else if (!bytes.equals(modelBytesAt(model.id, 0, model.onnx_bytes))) {
      problems.push(
        `model: models/${drop}/${model.id}/model.onnx differs from the service's (${String(bytes.length)} of ${String(model.onnx_bytes)} bytes)`,
      );
    }
  }
  return problems;
}

/** The drop's final status: succeeded, with its model in the bucket; no run left `running`. */
export async function finalStatusTrue(world: World, s3: Bucket, drop: string): Promise<string[]> {
  const { status } = world;
  if (status === null) return ['status: no status/<drop>.json at the end (hopper status says no run)'];
  const problems: string[] = [];
  if (status.state !== 'succeeded') {
    problems.push(
      `status: the drop ends ${status.state} at ${status.hopper_step}${status.error === null ? '' : ` (${status.error.code}: ${status.error.message.slice(0, 160)})`}`,
    );
  } else if (status.model_id === null || (await bytesOf(s3, modelFileKey(drop, status.model_id))) === null) {
    problems.push(
      `status: says succeeded, but its model ${String(status.model_id)} is not under models/${drop}/`,
    );
  }
  const running = (status.superseded_runs ?? []).filter((run) => run.state === 'running');
  for (const run of running)
    problems.push(`status: older run ${run.run_id} is still shown running at ${run.hopper_step}`);
  return problems;
}

/** How many credits a trial may spend, and why that many. */
export interface CreditsAllowed {
  readonly allowed: number;
  readonly why: string;
}

/**
 * What holds at the restart after a kill: a run that had started shows (a status), and the
 * status's advice is true of the service (interruptedAdviceTrue).
 */
export function restartInvariants(atRestart: World, drop: string, runStarted: boolean): string[] {
  return [
    ...(atRestart.status === null && runStarted
      ? ['status: no run after the restart though one had started (hopper status says "no run")']
      : []),
    ...interruptedAdviceTrue(atRestart, drop),
  ];
}

/**
 * What holds once the advice was followed: at most `allowed` credits spent (`why`), no orphan at
 * the service, every done model copied, a final status that is true.
 */
export async function endInvariants(
  world: World,
  s3: Bucket,
  drop: string,
  credits: CreditsAllowed,
): Promise<string[]> {
  return [
    ...creditsWithin(world, credits.allowed, credits.why),
    ...orphans(world),
    ...(await modelsCopied(world, s3, drop)),
    ...(await finalStatusTrue(world, s3, drop)),
  ];
}

/**
 * What the status of a run interrupted by the kill says, against the service: "before it had a
 * dataset" while a dataset exists, "resumes it from its dataset" while a paid model exists or the
 * model was copied, "adopts model M" while M is not paid for.
 */
export function interruptedAdviceTrue(world: World, drop: string): string[] {
  const { status } = world;
  if (status === null) return [];
  const message = status.error?.message ?? '';
  const unnamed = world.datasets.filter((dataset) => !world.reports.includes(dataset.id));
  if (message.includes(`hopper retry ${drop} starts it again from the drop's files`) && unnamed.length > 0) {
    return [
      `advice: says "${status.state} before it had a dataset", but dataset ${unnamed.map((d) => d.id).join(', ')} exists at the service`,
    ];
  }
  const resumes = /resumes it from its dataset (\S+)/.exec(message);
  if (resumes !== null) {
    const paid = world.models.filter(
      (model) => model.dataset_id === resumes[1] && ['queued', 'training', 'done'].includes(model.status),
    );
    if (paid.length > 0) {
      return [
        `advice: says "resumes it from its dataset", but model ${paid.map((m) => `${m.id} (${m.status})`).join(', ')} of that dataset was paid for${status.model === null ? '' : ' and copied'}`,
      ];
    }
  }
  const adopts = /its model (\S+) was paid for/.exec(message);
  if (adopts !== null && !world.models.some((model) => model.id === adopts[1])) {
    return [`advice: says "hopper retry adopts model ${String(adopts[1])}", which the service does not hold`];
  }
  return [];
}

async function keysUnder(s3: Bucket, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  for (let page = 0; page < 100; page += 1) {
    const listed = await s3.client.send(
      new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: prefix, ContinuationToken: token }),
    );
    for (const object of listed.Contents ?? []) if (object.Key !== undefined) keys.push(object.Key);
    token = listed.NextContinuationToken;
    if (token === undefined) break;
  }
  return keys;
}

async function bytesOf(s3: Bucket, key: string): Promise<Buffer | null> {
  try {
    const object = await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }));
    return Buffer.from((await object.Body?.transformToByteArray()) ?? []);
  } catch (error) {
    if (error instanceof Error && error.name === 'NoSuchKey') return null;
    throw error;
  }
}

async function textOf(s3: Bucket, key: string): Promise<string> {
  return (await bytesOf(s3, key))?.toString('utf8') ?? '';
}
