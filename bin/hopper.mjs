#!/usr/bin/env node
// The hopper command. It runs the TypeScript sources directly through tsx, so a clone needs
// `npm ci` and nothing else: no build step, no compiled copy to keep in sync.
import { register } from 'tsx/esm/api';

// The AWS SDK's notice that its releases after January 2027 need Node 22 is for whoever picks
// Node versions (README.md says which work), not for someone watching a local run.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
register();
const { main } = await import('../local/cli/index.js');
process.exitCode = await main(process.argv.slice(2));
