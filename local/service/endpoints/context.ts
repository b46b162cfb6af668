/**
 * What an API handler receives (the running service's parts of parts.ts, and the request), and
 * the lookups every handler starts with.
 */
import { notFound, renderDataset, renderModel, type Dataset, type Model } from '../domain/index.js';
import type { EndpointName } from '../options.js';
import type { Admitted, ServiceParts } from './parts.js';
import { uploadPath } from './presigned.js';

/** An API request as its handler gets it; `now`: service time when it arrived, one value for the whole request. */
export type RequestContext = Pick<ServiceParts, 'state' | 'signer'> &
  Pick<Admitted<EndpointName>, 'req' | 'url' | 'params'> & { readonly now: number };

export function param(ctx: RequestContext, name: string): string {
  const value = ctx.params[name];
  if (value === undefined) throw new Error(`route has no {${name}}`);
  return value;
}

export function findDataset(ctx: RequestContext): Dataset {
  return found(ctx.state.datasets, param(ctx, 'dataset'), 'dataset');
}

export function findModel(ctx: RequestContext): Model {
  return found(ctx.state.models, param(ctx, 'model'), 'model');
}

function found<T>(records: ReadonlyMap<string, T>, id: string, kind: string): T {
  const record = records.get(id);
  if (record === undefined) throw notFound(`no ${kind} ${id}`);
  return record;
}

/** The dataset record, with a fresh upload URL for each pending file. */
export function datasetRecord(ctx: RequestContext, dataset: Dataset): Record<string, unknown> {
  const expiresAt = ctx.now + ctx.state.knobs.uploadUrlTtlMs;
  const record = renderDataset(dataset, ctx.now, (file) => ({
    url: ctx.signer.presign(uploadPath(dataset.id, file.id), expiresAt),
    expiresAt,
  }));
  return renamedNextAction(ctx, record);
}

export function modelRecord(ctx: RequestContext, model: Model): Record<string, unknown> {
  return renamedNextAction(ctx, renderModel(model, ctx.now));
}

/** Applies the renameNextActions knob to a record on its way out. */
function renamedNextAction(ctx: RequestContext, record: Record<string, unknown>): Record<string, unknown> {
  const shown = ctx.state.knobs.renameNextActions[String(record.next_action)];
  return shown === undefined ? record : { ...record, next_action: shown };
}
