/**
 * The local console as the commands use it: started when chosen.
 */
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
  return startConsole(local, { port: choice.port, dataDir: mode.dataDir, apiKey: mode.service?.apiKey });
}
