/**
 * The local console as the commands use it: started when chosen.
 */
import type { LocalMode } from '../emulator/local-mode.js';
import type { LocalCommandOptions } from '../cli/options.js';
import { startConsole, type LocalConsole } from './server.js';

export { startConsole, type LocalConsole } from './server.js';

/** The console when the command's options enable it, else undefined. */
export async function consoleFor(
  local: LocalMode,
  { console: choice, mode }: LocalCommandOptions,
): Promise<LocalConsole | undefined> {
  if (choice?.enabled !== true) return undefined;
  return startConsole(local, { port: choice.port, dataDir: mode.dataDir, apiKey: mode.service?.apiKey });
}
