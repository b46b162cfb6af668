/**
 * What travels with one invocation through its async context: the invocation's logger, for the
 * shared parts that log on its behalf (the service client), and the meter its S3 requests count
 * into (s3-requests.ts).
 *
 * One AsyncLocalStorage holds both, and every handler bundle loaded in the process shares it
 * (through a global symbol): local mode runs the 12 bundles in one process, and on Node 20 each
 * AsyncLocalStorage in use costs every promise the process creates a copy of its store
 * (async_hooks' _propagate). One storage a concern in each bundle made 24, which took a fifth of
 * a local run's CPU. In Lambda a process loads one bundle: the sharing changes nothing there.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Logger } from '@aws-lambda-powertools/logger';

/** What one invocation's async context carries. */
export interface InvocationScope {
  readonly logger: Logger;
  /** Counts an S3 request by its command name (S3RequestMeter). */
  readonly meter: { count(commandName: string): void };
}

const SHARED = Symbol.for('hopper.invocation-scope');
const holder = globalThis as { [SHARED]?: AsyncLocalStorage<InvocationScope> };
const scopes = (holder[SHARED] ??= new AsyncLocalStorage<InvocationScope>());

/** Runs `work` within `scope`: what it and the parts it calls ask for is the invocation's. */
export function withinInvocation<T>(scope: InvocationScope, work: () => Promise<T>): Promise<T> {
  return scopes.run(scope, work);
}

/** The scope of the invocation running now; undefined outside one. */
export function currentInvocation(): InvocationScope | undefined {
  return scopes.getStore();
}
