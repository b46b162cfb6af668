/**
 * The API server's request pipeline: route -> fault injection -> auth -> handler (which
 * validates, then acts) -> answer. Handlers return a Reply instead of writing it, so a
 * 'drop_after' fault can run them and then drop the connection, and 'stall' can delay them.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  createDataset,
  completeFile,
  getDataset,
  nextLabel,
  postLabel,
  structure,
  suggest,
} from './api-datasets.js';
import { listDatasets, listModels } from './api-lists.js';
import { createModel, downloadLink, getModel, listEncoders } from './api-models.js';
import type { RequestContext, ServiceParts } from './context.js';
import { invalidRequest, notFound, ServiceError } from '../domain/index.js';
import { answer, misbehavedReply } from '../faults/index.js';
import {
  asServiceError,
  errorReply,
  guarded,
  matchPath,
  requestUrl,
  sendReply,
  type Reply,
} from '../http/index.js';
import type { EndpointName } from '../options.js';

interface Route {
  method: 'GET' | 'POST';
  pattern: string;
  endpoint: EndpointName;
  /** Lists read their own query; every other endpoint takes none. */
  takesQuery?: boolean;
  handle: (ctx: RequestContext) => Reply | Promise<Reply>;
}

const ROUTES: readonly Route[] = [
  {
    method: 'GET',
    pattern: '/v1/datasets',
    endpoint: 'listDatasets',
    takesQuery: true,
    handle: listDatasets,
  },
  { method: 'POST', pattern: '/v1/datasets', endpoint: 'createDataset', handle: createDataset },
  { method: 'GET', pattern: '/v1/datasets/:id', endpoint: 'getDataset', handle: getDataset },
  {
    method: 'POST',
    pattern: '/v1/datasets/:id/files/:fileId/complete',
    endpoint: 'completeFile',
    handle: completeFile,
  },
  { method: 'POST', pattern: '/v1/datasets/:id/suggest', endpoint: 'suggest', handle: suggest },
  { method: 'POST', pattern: '/v1/datasets/:id/structure', endpoint: 'structure', handle: structure },
  { method: 'GET', pattern: '/v1/datasets/:id/labels/next', endpoint: 'nextLabel', handle: nextLabel },
  { method: 'POST', pattern: '/v1/datasets/:id/labels/:task', endpoint: 'postLabel', handle: postLabel },
  { method: 'POST', pattern: '/v1/datasets/:id/models', endpoint: 'createModel', handle: createModel },
  { method: 'GET', pattern: '/v1/encoders', endpoint: 'listEncoders', handle: listEncoders },
  { method: 'GET', pattern: '/v1/models', endpoint: 'listModels', takesQuery: true, handle: listModels },
  { method: 'GET', pattern: '/v1/models/:id', endpoint: 'getModel', handle: getModel },
  { method: 'GET', pattern: '/v1/models/:id/download', endpoint: 'downloadLink', handle: downloadLink },
];

function findRoute(
  method: string,
  path: string,
): { route: Route; params: Record<string, string> } | undefined {
  for (const route of ROUTES) {
    if (route.method !== method) continue;
    const params = matchPath(route.pattern, path);
    if (params !== undefined) return { route, params };
  }
  return undefined;
}

export function createApiHandler(parts: ServiceParts): (req: IncomingMessage, res: ServerResponse) => void {
  return guarded((req, res) => handleApiRequest(parts, req, res));
}

async function handleApiRequest(
  parts: ServiceParts,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const url = requestUrl(req);
  const found = url && findRoute(req.method ?? '', url.pathname);
  if (url === undefined || found === undefined) {
    sendReply(res, errorReply(notFound(`no route ${req.method ?? ''} ${url?.pathname ?? req.url ?? ''}`)));
    return;
  }
  const { route, params } = found;
  const admission = parts.gate.admit(route.endpoint, req, (reply) => {
    sendReply(res, reply);
  });
  if (admission.answered) return;
  const { fault } = admission;
  const { state, signer } = parts;

  let reply: Reply;
  try {
    if (req.headers.authorization !== `Bearer ${state.knobs.apiKey}`) {
      throw new ServiceError('unauthorized', 'missing or wrong API key (Authorization: Bearer <key>)');
    }
    if (route.takesQuery !== true && url.search !== '')
      throw invalidRequest(`${route.endpoint} takes no query`);
    const handled = await route.handle({ state, signer, req, url, params, now: state.now() });
    reply = misbehavedReply(handled, fault, { signer, endpoint: route.endpoint, url });
  } catch (error) {
    reply = errorReply(asServiceError(error));
  }

  await answer(req, res, reply, fault, parts.sleep);
}
