#!/usr/bin/env node
// The hopper command. It runs the TypeScript sources directly through tsx, so a clone needs
// `npm ci` and nothing else: no build step, no compiled copy to keep in sync.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../local/cli.ts');
process.exitCode = await main(process.argv.slice(2));
