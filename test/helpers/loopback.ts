/** HTTP stand-ins on loopback: a server listening on a free port, and a way to close it at once. */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Listening {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** Closes the server, dropping its open connections first. */
  readonly close: () => Promise<void>;
}

/** Starts `server` on a free port of 127.0.0.1. */
export async function listenOnLoopback(server: Server): Promise<Listening> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
}
