/**
 * What an API handler receives, and the lookups every handler starts with.
 */
import type { IncomingMessage } from 'node:http';
import type { Dataset } from '../domain/datasets.js';
import { renderDataset } from '../domain/datasets.js';
import { notFound } from '../domain/errors.js';
import { renderModel, type Model } from '../domain/models.js';
import type { ServiceState } from '../domain/state.js';

export interface RequestContext {
  state: ServiceState;
  req: IncomingMessage;
  url: URL;
  /** Named path segments (':id' -> params.id). */
  params: Record<string, string>;
  /** Service time when the request arrived; one value for the whole request. */
  now: number;
}

export function param(ctx: RequestContext, name: string): string {
  const value = ctx.params[name];
  if (value === undefined) throw new Error(`route has no :${name}`);
  return value;
}

export function findDataset(ctx: RequestContext): Dataset {
  const id = param(ctx, 'id');
  const dataset = ctx.state.datasets.get(id);
  if (dataset === undefined) throw notFound(`no dataset ${id}`);
  return dataset;
}

export function findModel(ctx: RequestContext): Model {
  const id = param(ctx, 'id');
  const model = ctx.state.models.get(id);
  if (model === undefined) throw notFound(`no model ${id}`);
  return model;
}

export function datasetRecord(ctx: RequestContext, dataset: Dataset): Record<string, unknown> {
  const record = renderDataset(dataset, ctx.now, (d, file) => ctx.state.uploadLink(d, file, ctx.now));
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
