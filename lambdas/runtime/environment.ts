/**
 * The environment variables Hopper's Lambda functions read, set by the stack
 * (infra/constructs/pipeline.ts). A module of names only, so whoever needs a name (the stack, the
 * trigger, the CLI) imports no runtime with it.
 */
export const ENV = {
  serviceUrl: 'HOPPER_SERVICE_URL',
  apiKeySecret: 'HOPPER_API_KEY_SECRET_ARN',
  stateMachineArn: 'HOPPER_STATE_MACHINE_ARN',
  /** The `source` of Hopper's run events (default DEFAULT_EVENT_SOURCE, lambdas/records/events/events.ts). */
  eventSource: 'HOPPER_EVENT_SOURCE',
  /** The credit budget: credits in any 24 hours, and in any 30 days (lambdas/ownership/credit-ledger.ts). */
  creditBudget: 'HOPPER_CREDIT_BUDGET',
  creditBudget30Days: 'HOPPER_CREDIT_BUDGET_30_DAYS',
} as const;

export function optionalEnv(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value === '' ? undefined : value;
}

export function requireEnv(env: NodeJS.ProcessEnv, name: string): string {
  const value = optionalEnv(env, name);
  if (value === undefined) throw new Error(`environment variable ${name} is not set`);
  return value;
}
