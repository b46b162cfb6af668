/**
 * The API server's request pipeline: route -> fault injection -> auth -> handler (which
 * validates, then acts) -> answer. Handlers return a Reply instead of writing it, so a
 * 'drop_after' fault can run them and then drop the connection, and 'stall' can delay them.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  ENDPOINTS,
  type Endpoint,
  type EndpointName as ApiEndpointName,
} from '../../../lambdas/service-client/contract.js';
import { invalidRequest, notFound, ServiceError } from '../domain/index.js';
import { answer, LIST_ENDPOINTS, misbehavedReply } from '../faults/index.js';
import {
  asServiceError,
  errorReply,
  guarded,
  matchPath,
  requestUrl,
  sendReply,
  type Reply,
} from '../http/index.js';
import {
  completeFile,
  createDataset,
  getDataset,
  nextLabelTask,
  structure,
  submitLabel,
  suggest,
} from './api-datasets.js';
import { listDatasets, listModels } from './api-lists.js';
import { getDownloadLink, getModel, listEncoders, startTraining } from './api-models.js';
import type { RequestContext, ServiceParts } from './context.js';

type Handler = (ctx: RequestContext) => Reply | Promise<Reply>;

/** A handler for every endpoint of the contract, which owns their names, methods and paths. */
const HANDLERS: Readonly<Record<ApiEndpointName, Handler>> = {
  listDatasets,
  createDataset,
  getDataset,
  completeFile,
  suggest,
  structure,
  nextLabelTask,
  submitLabel,
  listEncoders,
  startTraining,
  listModels,
  getModel,
  getDownloadLink,
};

const ROUTES = Object.entries(ENDPOINTS) as [ApiEndpointName, Endpoint][];

function findRoute(
  method: string,
  path: string,
): { endpoint: ApiEndpointName; params: Record<string, string> } | undefined {
  for (const [endpoint, route] of ROUTES) {
    if (route.method !== method) continue;
    const params = matchPath(route.template, path);
    if (params !== undefined) return { endpoint, params };
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
  const { endpoint, params } = found;
  const admission = parts.gate.admit(endpoint, req, (reply) => {
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
    // Lists read their own query; every other endpoint takes none.
    if (!LIST_ENDPOINTS.includes(endpoint) && url.search !== '')
      throw invalidRequest(`${endpoint} takes no query`);
    const handled = await HANDLERS[endpoint]({ state, signer, req, url, params, now: state.now() });
    reply = misbehavedReply(handled, fault, { signer, endpoint, url });
  } catch (error) {
    reply = errorReply(asServiceError(error));
  }

  await answer(req, res, reply, fault, parts.sleep);
}
