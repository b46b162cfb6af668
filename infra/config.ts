/**
 * The stack's settings from CDK context (`cdk deploy -c key=value`, or "context" in cdk.json),
 * checked here so a typo fails at synth with a clear message rather than at deploy. Every key
 * and its default is listed in docs/deploy.md.
 */
import type { Node } from 'constructs';
import type { HopperStackProps } from './stack.js';

/** The context keys Hopper reads. */
export const CONTEXT_KEYS = {
  serviceUrl: 'serviceUrl',
  apiKeySecretName: 'apiKeySecretName',
  bucketName: 'bucketName',
  notificationEmail: 'notificationEmail',
  eventSource: 'eventSource',
  runNotificationEmail: 'runNotificationEmail',
  inboxRetentionDays: 'inboxRetentionDays',
  stackName: 'stackName',
  logLevel: 'logLevel',
} as const;

/** The levels Powertools Logger knows (POWERTOOLS_LOG_LEVEL), least to most severe. */
export const LOG_LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'CRITICAL', 'SILENT'] as const;
export type HopperLogLevel = (typeof LOG_LEVELS)[number];

export const DEFAULT_STACK_NAME = 'Hopper';

export interface HopperConfig {
  readonly stackName: string;
  readonly props: HopperStackProps;
}

export function configFromContext(node: Node): HopperConfig {
  const text = (key: string): string | undefined => {
    const value: unknown = node.tryGetContext(key);
    if (value === undefined || value === null || value === '') return undefined;
    if (typeof value !== 'string')
      throw new Error(`context ${key} must be a string, got ${JSON.stringify(value)}`);
    return value.trim();
  };

  const serviceUrl = text(CONTEXT_KEYS.serviceUrl);
  if (serviceUrl !== undefined) checkServiceUrl(serviceUrl);
  const bucketName = text(CONTEXT_KEYS.bucketName);
  if (bucketName !== undefined && !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucketName)) {
    throw new Error(`context bucketName: "${bucketName}" is not a valid S3 bucket name`);
  }
  const email = (key: string): string | undefined => {
    const value = text(key);
    if (value !== undefined && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(value)) {
      throw new Error(`context ${key}: "${value}" is not an e-mail address`);
    }
    return value;
  };
  const notificationEmail = email(CONTEXT_KEYS.notificationEmail);
  const runNotificationEmail = email(CONTEXT_KEYS.runNotificationEmail);
  const eventSource = text(CONTEXT_KEYS.eventSource);
  if (eventSource !== undefined) checkEventSource(eventSource);
  const stackName = text(CONTEXT_KEYS.stackName) ?? DEFAULT_STACK_NAME;
  if (!/^[A-Za-z][A-Za-z0-9-]{0,127}$/.test(stackName)) {
    throw new Error(`context stackName: "${stackName}" is not a valid CloudFormation stack name`);
  }

  const logLevel = text(CONTEXT_KEYS.logLevel);
  return {
    stackName,
    props: {
      logLevel: logLevel === undefined ? undefined : checkLogLevel(logLevel),
      serviceUrl,
      apiKeySecretName: text(CONTEXT_KEYS.apiKeySecretName),
      bucketName,
      notificationEmail,
      eventSource,
      runNotificationEmail,
      inboxRetentionDays: positiveDays(node.tryGetContext(CONTEXT_KEYS.inboxRetentionDays)),
    },
  };
}

/**
 * An event source PutEvents takes from Hopper: up to 256 printable characters, and not one of
 * AWS's (`aws.*`), which EventBridge refuses from an account.
 */
function checkEventSource(value: string): void {
  if (!/^[A-Za-z0-9][A-Za-z0-9._\-/]{0,255}$/.test(value)) {
    throw new Error(
      `context eventSource: "${value}" is not an event source: use letters, digits and . _ - / (e.g. hopper or com.example.hopper)`,
    );
  }
  if (/^aws\./i.test(value)) {
    throw new Error(`context eventSource: "${value}" starts with "aws.", which only AWS services may use`);
  }
}

function checkServiceUrl(value: string): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`context serviceUrl: "${value}" is not a URL`);
  }
  // The API key travels in the Authorization header: never over plain http.
  if (url.protocol !== 'https:') throw new Error(`context serviceUrl: "${value}" must be an https:// URL`);
  if (/\/v1\/?$/.test(url.pathname)) {
    throw new Error(`context serviceUrl: give the base URL without /v1 (Hopper adds it), not "${value}"`);
  }
}

function checkLogLevel(value: string): HopperLogLevel {
  const level = LOG_LEVELS.find((known) => known === value.toUpperCase());
  if (level === undefined) {
    throw new Error(`context logLevel: "${value}" is not a log level; use one of ${LOG_LEVELS.join(', ')}`);
  }
  return level;
}

function positiveDays(value: unknown): number | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const days = typeof value === 'number' ? value : Number(value);
  if (!Number.isInteger(days) || days < 1) {
    throw new Error(
      `context inboxRetentionDays must be a whole number of days >= 1, got ${JSON.stringify(value)}`,
    );
  }
  return days;
}
