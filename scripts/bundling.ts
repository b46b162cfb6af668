/**
 * How a handler is bundled (scripts/build.ts; the cold-start benchmark bundles one again with
 * each source-map option). The bundles leave the AWS SDK v3 to the Lambda runtime, which includes
 * it (bundled, the S3 client alone added ~300 KB to every function); bundled CommonJS dependencies
 * (undici) still call `require` for Node built-ins, which an ES module lacks, so the banner
 * provides one. No source maps: with --enable-source-maps a bundle took ~70 ms more CPU to load
 * and the first stack trace of a container ~0.7 s (docs/deploy.md#bundles).
 */
import type { BuildOptions } from 'esbuild';

export const HANDLER_BUNDLING = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  // Local mode runs the bundles on Node 20 too; Lambda runs them on Node.js 24.
  target: 'node20',
  mainFields: ['module', 'main'],
  external: ['@aws-sdk/*'],
  minify: true,
  sourcemap: false,
  banner: {
    js: "import { createRequire as __hopperCreateRequire } from 'node:module'; const require = __hopperCreateRequire(import.meta.url);",
  },
  logLevel: 'warning',
} as const satisfies BuildOptions;
