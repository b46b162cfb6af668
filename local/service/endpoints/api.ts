/**
 * The API server's request pipeline: route -> fault injection -> auth -> handler (which
 * validates, then acts) -> answer. Handlers return a Reply instead of writing it, so a
 * 'drop_after' fault can run them and then drop the connection, and 'stall' can delay them.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ENDPOINTS, type EndpointName as ApiEndpointName } from '../../../lambdas/service-client/contract.js';
import { invalidRequest, ServiceError } from '../domain/index.js';
import { answer, LIST_ENDPOINTS, misbehavedReply } from '../faults/index.js';
import { asServiceError, errorReply, sendReply, type Reply } from '../http/index.js';
import * as datasetHandlers from './api-datasets.js';
import * as listHandlers from './api-lists.js';
import * as modelHandlers from './api-models.js';
import type { RequestContext } from './context.js';
import type { ServiceParts } from './parts.js';
import { serve, type Route } from './serve.js';

type Handler = (ctx: RequestContext) => Reply | Promise<Reply>;

/**
 * A handler for every endpoint of the contract, which owns their names, methods and paths: each
 * handler module exports its endpoints' handlers under the contract's names.
 */
const HANDLERS: Readonly<Record<ApiEndpointName, Handler>> = {
  ...datasetHandlers,
  ...listHandlers,
  ...modelHandlers,
};

const ROUTES: readonly Route<ApiEndpointName>[] = Object.entries(ENDPOINTS).map(([endpoint, route]) => ({
  ...route,
  endpoint: endpoint as ApiEndpointName,
}));

export function createApiHandler(parts: ServiceParts): (req: IncomingMessage, res: ServerResponse) => void {
  return serve(parts, ROUTES, sendReply, async ({ endpoint, req, res, url, params, fault }) => {
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
  });
}
