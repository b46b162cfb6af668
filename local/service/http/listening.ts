/**
 * The listening side of the two servers: binding a port, stopping with every connection
 * dropped, and the timers behind delayed answers, which closing ends at once.
 */
import { once, setMaxListeners } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import type { Sleep } from './http.js';

/** Listens on `host`:`port` (0: a free port); resolves to the server's origin. */
export async function listen(server: Server, host: string, port: number): Promise<string> {
  await once(server.listen(port, host), 'listening');
  const address = server.address() as AddressInfo;
  const shownHost = address.address.includes(':') ? `[${address.address}]` : address.address;
  return `http://${shownHost}:${address.port}`;
}

/** Closes the server and drops its open connections. */
export async function stop(server: Server): Promise<void> {
  const closed = once(server.close(), 'close');
  server.closeAllConnections();
  await closed;
}

/**
 * The waits behind delayed answers ('stall', 'trickle'): each lasts `ms`, or ends at once when
 * `closing` aborts, so that close() never waits on a stalled answer.
 */
export function sleepUntil(closing: AbortSignal): Sleep {
  // One listener per delayed answer under way: hundreds at once under load, by design, not a leak.
  setMaxListeners(0, closing);
  return (ms) => delay(ms, undefined, { signal: closing }).catch(() => undefined);
}
