/**
 * Handlers of the model endpoints: encoders, start a training, get a model, download link.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { assertFilesServable, datasetState, ServiceError, type Model } from '../domain/index.js';
import { parseJsonObject, readSmallBody, validate, type Reply } from '../http/index.js';
import { findDataset, findModel, modelRecord, type RequestContext } from './context.js';
import { downloadPath } from './presigned.js';

const startTrainingSchema = z.strictObject({ encoder: z.string() });

export function listEncoders(ctx: RequestContext): Reply {
  return { status: 200, body: { data: ctx.state.knobs.encoders, next: null } };
}

export async function startTraining(ctx: RequestContext): Promise<Reply> {
  const dataset = findDataset(ctx);
  const body = validate(startTrainingSchema, parseJsonObject(await readSmallBody(ctx.req), false), 'body');
  const { state, now } = ctx;
  const knobs = state.knobs;
  if (!knobs.encoders.some((encoder) => encoder.id === body.encoder)) {
    throw new ServiceError('unknown_encoder', `no encoder ${body.encoder}`);
  }
  const { status } = datasetState(dataset, now);
  if (status !== 'ready') throw new ServiceError('not_ready', `dataset is ${status}, not ready to train`);
  if (state.credits(now) <= 0) throw new ServiceError('no_credits', 'no credits left');

  const fails = knobs.failTrainings > 0;
  if (fails) state.configure({ failTrainings: knobs.failTrainings - 1 });
  const [metrics, ...later] = knobs.trainingMetrics ?? [];
  if (metrics !== undefined) state.configure({ trainingMetrics: later });
  let version = 1;
  for (const model of state.models.values()) if (model.datasetId === dataset.id) version += 1;
  const trainingAt = now + knobs.queuedMs;
  const finishedAt = trainingAt + knobs.trainingMs;
  const model: Model = {
    id: randomUUID(),
    seq: state.takeSeq(),
    datasetId: dataset.id,
    name: `${dataset.name} v${version}`,
    version,
    encoder: body.encoder,
    createdAt: now,
    trainingAt,
    finishedAt,
    fails,
    ...(metrics === undefined ? {} : { metrics }),
    onnxBytes: knobs.modelBytes,
    holdoutN: dataset.tasks.length,
    filesExpireAt: finishedAt + knobs.modelFilesTtlMs,
    decisions: { ...dataset.structuring?.answers },
  };
  state.models.set(model.id, model);
  return { status: 201, body: modelRecord(ctx, model) };
}

export function getModel(ctx: RequestContext): Reply {
  return { status: 200, body: modelRecord(ctx, findModel(ctx)) };
}

export function getDownloadLink(ctx: RequestContext): Reply {
  const model = findModel(ctx);
  assertFilesServable(model, ctx.now);
  const expiresAt = Math.min(ctx.now + ctx.state.knobs.downloadUrlTtlMs, model.filesExpireAt);
  return {
    status: 200,
    body: {
      url: ctx.signer.presign(downloadPath(model.id), expiresAt),
      expires_at: new Date(expiresAt).toISOString(),
    },
  };
}
