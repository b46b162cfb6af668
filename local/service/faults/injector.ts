/**
 * Failure injection: decides, per request, which FaultRule (if any) fires. Rules are checked in
 * order and the first that fires wins; rules after it are not consulted for that request.
 */
import type { Random } from '../domain/index.js';
import { isMisbehaviour, type EndpointName, type FaultRule } from '../options.js';
import { isFileEndpoint, misbehaviourAppliesTo, resolveMisbehaviour } from './misbehaviour.js';

export const FAULT_DEFAULTS = { retryAfterSeconds: 1, stallMs: 5000, cutAfterBytes: 1024 } as const;

export class FaultInjector {
  private rules: readonly FaultRule[] = [];
  /** Matching requests seen so far, per rule (drives `count`). */
  private matched: number[] = [];
  /** Rules fired so far, by kind (since the service started; setRules keeps them). */
  private readonly fired = new Map<FaultRule['kind'], number>();

  constructor(
    rules: readonly FaultRule[],
    private random: Random,
  ) {
    this.setRules(rules);
  }

  /** Replaces the rules; `count` budgets start again from zero. */
  setRules(rules: readonly FaultRule[]): void {
    this.rules = rules.map((rule) => ({ ...rule }));
    this.matched = rules.map(() => 0);
  }

  /** Restarts the random draws behind `rate` (a new seed). */
  setRandom(random: Random): void {
    this.random = random;
  }

  /** How many times rules of `kind` fired (every kind when absent). */
  firedCount(kind?: FaultRule['kind']): number {
    if (kind !== undefined) return this.fired.get(kind) ?? 0;
    return [...this.fired.values()].reduce((total, count) => total + count, 0);
  }

  /** The rule that fires for this request to `endpoint`, if any. */
  pick(endpoint: EndpointName): FaultRule | undefined {
    for (const [index, rule] of this.rules.entries()) {
      if (!appliesTo(rule, endpoint)) continue;
      const seen = (this.matched[index] ?? 0) + 1;
      this.matched[index] = seen;
      if (fires(rule, seen, this.random)) {
        this.fired.set(rule.kind, (this.fired.get(rule.kind) ?? 0) + 1);
        return resolveMisbehaviour(rule, this.random);
      }
    }
    return undefined;
  }
}

function appliesTo(rule: FaultRule, endpoint: EndpointName): boolean {
  if (rule.endpoint !== '*' && rule.endpoint !== endpoint) return false;
  if (isMisbehaviour(rule.kind)) return misbehaviourAppliesTo(rule.kind, endpoint);
  // A cut needs a body to cut: only file downloads have one worth cutting.
  if (rule.kind === 'cut') return endpoint === 'fileDownload';
  // Only presigned URLs expire.
  if (rule.kind === 'expire') return isFileEndpoint(endpoint);
  return true;
}

/**
 * `count` fires for the first N matching requests; once spent (or when absent) `rate` decides;
 * a rule with neither fires on every matching request.
 */
function fires(rule: FaultRule, seen: number, random: Random): boolean {
  if (rule.count !== undefined && seen <= rule.count) return true;
  if (rule.rate !== undefined) return random() < rule.rate;
  return rule.count === undefined;
}
