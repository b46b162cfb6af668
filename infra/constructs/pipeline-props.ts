/**
 * The pipeline's props, apart from the construct so that what reads them (permissions.ts,
 * hopper-function.ts) need not import the pipeline that imports them.
 */
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import type { CreditBudget } from '../../lambdas/ownership/index.js';
import type { HopperLogLevel } from './hopper-props.js';

export interface HopperPipelineProps {
  /** The bucket drops arrive in; it must send its events to EventBridge (HopperStorage does). */
  readonly bucket: IBucket;
  /** The Secrets Manager secret whose plain-text value is the training service's API key. */
  readonly apiKeySecret: ISecret;
  /**
   * What the handlers are given to find the secret (HOPPER_API_KEY_SECRET_ARN).
   * @default apiKeySecret.secretArn; pass the name for a secret imported by name, whose ARN
   * CloudFormation only knows without its random suffix
   */
  readonly apiKeySecretId?: string;
  /** The training service's base URL (https, without /v1): HOPPER_SERVICE_URL. */
  readonly serviceUrl: string;
  /**
   * The `source` of the run events on the default bus (HOPPER_EVENT_SOURCE); the Tasks that put
   * them may put no other. @default DEFAULT_EVENT_SOURCE (`hopper`)
   */
  readonly eventSource?: string;
  /** How long Lambda and state machine logs are kept. @default RetentionDays.THREE_MONTHS */
  readonly logRetention?: RetentionDays;
  /** The level of every function's logs (POWERTOOLS_LOG_LEVEL). @default 'INFO' */
  readonly logLevel?: HopperLogLevel;
  /** The credit budget of the Tasks that take and give back credits. @default - none */
  readonly creditBudget?: CreditBudget;
}
