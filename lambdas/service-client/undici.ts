// eslint-disable-next-line @typescript-eslint/triple-slash-reference -- the declarations of undici's inner files must reach every program that compiles this file, the construct's type roll-up included
/// <reference path="./undici-parts.d.ts" />
/**
 * The two parts of undici the client uses, the keep-alive Agent and `request`, each imported from
 * its own file. undici's index loads every dispatcher, fetch, WebSocket, EventSource, the caches
 * and the mocks, about 525 KB of a bundle; these two files and what they load are about 280 KB
 * (docs/deploy.md#bundles). Types come from undici's own declarations (undici-parts.d.ts).
 */
import type { Dispatcher } from 'undici';
import AgentClass from 'undici/lib/dispatcher/agent.js';
import dispatchRequest from 'undici/lib/api/api-request.js';

export const Agent = AgentClass;
export type Agent = InstanceType<typeof AgentClass>;

export type RequestOptions = Omit<Dispatcher.RequestOptions, 'origin' | 'path'> & {
  readonly dispatcher: Dispatcher;
};

/** undici's `request(url, options)` for a given dispatcher: the URL split into origin and path. */
export function request(url: string, options: RequestOptions): Promise<Dispatcher.ResponseData> {
  const { dispatcher, ...rest } = options;
  const parsed = new URL(url);
  return dispatchRequest.call(dispatcher, {
    ...rest,
    origin: parsed.origin,
    path: `${parsed.pathname}${parsed.search}`,
  });
}
