/**
 * The `hopper` command's entry, compiled to dist/hopper.mjs (scripts/build.ts): the package's
 * bin, and what `npm start` runs in a clone. No tsx, no TypeScript at run time.
 */
import { main } from './cli/index.js';

// The AWS SDK's notice that its releases after January 2027 need Node 22 is for whoever picks
// Node versions (README.md says which work), not for someone watching a local run. The SDK reads
// it when a client is made, which is later than this.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
process.exitCode = await main(process.argv.slice(2));
