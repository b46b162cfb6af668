/**
 * The listening side of the two servers: binding a port, stopping with every connection
 * dropped, and the timers behind delayed answers, which closing ends at once.
 */
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
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

/** Timers behind 'stall' faults; close() ends them so it never waits on a stalled answer. */
export class SleepRegistry {
  private readonly pending = new Map<NodeJS.Timeout, () => void>();

  readonly sleep: Sleep = (ms) =>
    new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(timer);
        resolve();
      }, ms);
      this.pending.set(timer, resolve);
    });

  cancelAll(): void {
    for (const [timer, resolve] of this.pending) {
      clearTimeout(timer);
      resolve();
    }
    this.pending.clear();
  }
}
