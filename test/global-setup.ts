/**
 * Builds what the tests run (scripts/build.ts): the handler bundles local mode and the stack use,
 * the local definition, the construct and the `hopper` command. A test run never sees a build older
 * than the sources.
 */
import { execFileSync } from 'node:child_process';

export default function setup(): void {
  execFileSync(process.execPath, ['--import', 'tsx', 'scripts/build.ts'], { stdio: 'inherit' });
}
