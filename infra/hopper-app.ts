/**
 * The CDK app: the Hopper stack configured from context. The CLI entry (infra/app.ts), the tests
 * and local mode's definition extraction all build it here, so they see the same stack with the
 * same feature flags (cdk.json's context). cdk-nag, a build-time tool, is added by the CLI entry
 * and the tests (nag-checks.ts), never loaded by local mode: `hopper run` works from an install
 * without devDependencies.
 */
import { readFileSync } from 'node:fs';
import { App } from 'aws-cdk-lib';
import { configFromContext } from './config.js';
import { HopperStack } from './stack.js';

export interface HopperAppOptions {
  /**
   * Context on top of cdk.json's: settings (docs/deploy.md) and, to skip esbuild in tests,
   * `'aws:cdk:bundling-stacks': []`. The CLI's `-c` values still win over both.
   * @default - cdk.json's context only
   */
  readonly context?: Readonly<Record<string, unknown>>;
  /**
   * Run CDK's built-in CloudFormation template validation at synth (a few seconds; findings are
   * errors, cdk.json sets `@aws-cdk/core:validateAgainstDefaultRules`). @default true
   */
  readonly cloudFormationValidation?: boolean;
}

export interface HopperApp {
  readonly app: App;
  readonly stack: HopperStack;
}

export function createHopperApp(options: HopperAppOptions = {}): HopperApp {
  const app = new App({
    context: { ...cdkJsonContext(), ...options.context },
    builtinCloudFormationValidation: options.cloudFormationValidation ?? true,
  });
  const config = configFromContext(app.node);
  const stack = new HopperStack(app, config.stackName, config.props);
  return { app, stack };
}

/** The "context" of cdk.json: the feature flags the CLI would pass. */
export function cdkJsonContext(): Record<string, unknown> {
  const text = readFileSync(new URL('../cdk.json', import.meta.url), 'utf8');
  const parsed = JSON.parse(text) as { context?: Record<string, unknown> };
  return parsed.context ?? {};
}
