/**
 * The paged lists GET /v1/datasets and GET /v1/models: newest first by creation sequence,
 * cut by keyset cursors (see cursor.ts), filtered by status and usable as of now.
 */
import { z } from 'zod';
import type { DatasetStatus, ModelStatus } from '../../../lambdas/service-client/contract.js';
import { datasetState, modelState } from '../domain/index.js';
import {
  decodeCursor,
  encodeCursor,
  queryObject,
  validate,
  type ListFilters,
  type ListName,
  type Reply,
} from '../http/index.js';
import { datasetRecord, modelRecord, type RequestContext } from './context.js';

const listQuerySchema = z.strictObject({
  limit: z
    .string()
    .regex(/^\d{1,3}$/, 'must be an integer 1..100')
    .transform(Number)
    .pipe(z.number().int().min(1, 'must be an integer 1..100').max(100, 'must be an integer 1..100'))
    .optional(),
  cursor: z.string().min(1).optional(),
  status: z.string().min(1).optional(),
  usable: z.enum(['true', 'false']).optional(),
});

const DEFAULT_LIMIT = 25;

interface Listed {
  seq: number;
  status: DatasetStatus | ModelStatus;
  usable: boolean;
  render: () => unknown;
}

function page(ctx: RequestContext, list: ListName, newestFirst: Listed[]): Reply {
  const query = validate(listQuerySchema, queryObject(ctx.url), 'query');
  const filters: ListFilters = {
    status: query.status ?? null,
    usable: query.usable === undefined ? null : query.usable === 'true',
  };
  const after = query.cursor === undefined ? Infinity : decodeCursor(ctx.signer, query.cursor, list, filters);
  const limit = query.limit ?? DEFAULT_LIMIT;
  const matching = newestFirst.filter(
    (item) =>
      item.seq < after &&
      (filters.status === null || item.status === filters.status) &&
      (filters.usable === null || item.usable === filters.usable),
  );
  const items = matching.slice(0, limit);
  const last = items.at(-1);
  const next =
    matching.length > limit && last !== undefined ? encodeCursor(ctx.signer, list, filters, last.seq) : null;
  return { status: 200, body: { data: items.map((item) => item.render()), next } };
}

export function listDatasets(ctx: RequestContext): Reply {
  const items = [...ctx.state.datasets.values()].reverse().map((dataset): Listed => {
    const { status } = datasetState(dataset, ctx.now);
    return {
      seq: dataset.seq,
      status,
      usable: status !== 'expired',
      render: () => datasetRecord(ctx, dataset),
    };
  });
  return page(ctx, 'datasets', items);
}

export function listModels(ctx: RequestContext): Reply {
  const items = [...ctx.state.models.values()].reverse().map((model): Listed => {
    const { status, nextAction } = modelState(model, ctx.now);
    return {
      seq: model.seq,
      status,
      usable: nextAction === 'download',
      render: () => modelRecord(ctx, model),
    };
  });
  return page(ctx, 'models', items);
}
