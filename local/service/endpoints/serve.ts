/**
 * What both servers do with a request before its endpoint's handler: find its route, then let
 * faults/ admit it (count it, rate-limit it, fire a fault rule) or answer it there.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { notFound } from '../domain/index.js';
import { errorReply, guarded, matchPath, requestUrl, type Reply } from '../http/index.js';
import type { EndpointName } from '../options.js';
import type { Admitted, ServiceParts } from './parts.js';

/** An endpoint's method and path template ('{name}' marks a path parameter, as in contract.ts). */
export interface Route<E extends EndpointName> {
  readonly endpoint: E;
  readonly method: string;
  readonly template: string;
}

/**
 * A server's request handler: route (no route: 404 not_found) -> admission -> `handle`. `send`
 * writes the answers given before `handle`.
 */
export function serve<E extends EndpointName>(
  parts: ServiceParts,
  routes: readonly Route<E>[],
  send: (res: ServerResponse, reply: Reply) => void,
  handle: (request: Admitted<E>) => Promise<void>,
): (req: IncomingMessage, res: ServerResponse) => void {
  return guarded(async (req, res) => {
    const url = requestUrl(req);
    const found = url && findRoute(routes, req.method ?? '', url.pathname);
    if (url === undefined || found === undefined) {
      send(res, errorReply(notFound(`no route ${req.method ?? ''} ${url?.pathname ?? req.url ?? ''}`)));
      return;
    }
    const admission = parts.gate.admit(found.endpoint, req, (reply) => {
      send(res, reply);
    });
    if (!admission.answered) await handle({ ...found, req, res, url, fault: admission.fault });
  });
}

function findRoute<E extends EndpointName>(
  routes: readonly Route<E>[],
  method: string,
  path: string,
): { endpoint: E; params: Record<string, string> } | undefined {
  for (const route of routes) {
    const params = route.method === method ? matchPath(route.template, path) : undefined;
    if (params !== undefined) return { endpoint: route.endpoint, params };
  }
  return undefined;
}
