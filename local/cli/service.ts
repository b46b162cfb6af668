/**
 * `hopper service [flags]` (also `npm run service -- [flags]`): runs the simulated service on
 * its own until SIGINT/SIGTERM. Flags: see cli-args.ts (or --help).
 */
import { CliUsageError, parseCliArgs, type CliCommand } from './service-args.js';
import { startSimulatedService } from '../service/index.js';

/** Resolves to the exit code: 0 after a clean shutdown, 1 if the service cannot start, 2 on bad flags. */
export async function runServiceCommand(argv: readonly string[]): Promise<number> {
  let command: CliCommand;
  try {
    command = parseCliArgs(argv);
  } catch (error) {
    if (!(error instanceof CliUsageError)) throw error;
    console.error(`error: ${error.message}\nRun with --help to see every flag.`);
    return 2;
  }
  if (command.kind === 'help') {
    console.log(command.text);
    return 0;
  }

  let service: Awaited<ReturnType<typeof startSimulatedService>>;
  try {
    service = await startSimulatedService(command.options);
  } catch (error) {
    console.error(
      `error: the service could not start: ${error instanceof Error ? error.message : String(error)}`,
    );
    return 1;
  }
  console.log(`API URL:  ${service.apiUrl}`);
  console.log(`File URL: ${service.fileUrl}`);
  console.log(`API key:  ${service.apiKey}`);

  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  try {
    await service.close();
  } catch (error) {
    console.error(`error while closing after ${signal}:`, error);
    return 1;
  }
  return 0;
}
