/**
 * `npm run service -- [flags]`: runs the simulated service on its own until SIGINT/SIGTERM.
 * Flags: see cli-args.ts (or --help).
 */
import { CliUsageError, parseCliArgs, type CliCommand } from './cli-args.js';
import { startSimulatedService } from './server.js';

let command: CliCommand;
try {
  command = parseCliArgs(process.argv.slice(2));
} catch (error) {
  if (!(error instanceof CliUsageError)) throw error;
  console.error(`error: ${error.message}\nRun with --help to see every flag.`);
  process.exit(2);
}

if (command.kind === 'help') {
  console.log(command.text);
} else {
  const service = await startSimulatedService(command.options).catch((error: unknown) => {
    console.error(
      `error: the service could not start: ${error instanceof Error ? error.message : String(error)}`,
    );
    process.exit(1);
  });
  console.log(`API URL:  ${service.apiUrl}`);
  console.log(`File URL: ${service.fileUrl}`);
  console.log(`API key:  ${service.apiKey}`);
  const shutdown = (): void => {
    service.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error('error while closing:', error);
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}
