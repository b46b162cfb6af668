/**
 * The local console as the commands use it: started when chosen, and a wait for Ctrl-C for
 * `hopper run --console`, which keeps it up after the run.
 */
import { once } from 'node:events';
import type { LocalMode, LocalModeOptions } from '../emulator/local-mode.js';
import type { ConsoleChoice } from '../cli/options.js';
import { startConsole, type LocalConsole } from './server.js';

export { startConsole, type LocalConsole } from './server.js';

/** The console when `choice` enables it, else undefined. */
export async function consoleFor(
  local: LocalMode,
  choice: ConsoleChoice | undefined,
  mode: Pick<LocalModeOptions, 'dataDir' | 'service'>,
): Promise<LocalConsole | undefined> {
  if (choice?.enabled !== true) return undefined;
  return startConsole(local, {
    ...(choice.port === undefined ? {} : { port: choice.port }),
    ...(mode.dataDir === undefined ? {} : { dataDir: mode.dataDir }),
    ...(mode.service === undefined ? {} : { apiKey: mode.service.apiKey }),
  });
}

/** Resolves when `signal` aborts (at once if it has). */
export async function untilStopped(signal: AbortSignal): Promise<void> {
  if (!signal.aborted) await once(signal, 'abort');
}
