/**
 * The environment variables through which `hopper status`, `runs`, `models` and `retry` find a
 * running `hopper local` (it prints them as `export` lines) besides the AWS SDK's own
 * (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_SFN, credentials, region).
 */
import { ENV } from '../../lambdas/run/environment.js';

export const HOPPER_BUCKET_ENV = 'HOPPER_BUCKET';
/** The same names the Lambda functions read (lambdas/run/environment.ts). */
export const HOPPER_STATE_MACHINE_ENV = ENV.stateMachineArn;
export const HOPPER_SERVICE_URL_ENV = ENV.serviceUrl;
/** Step Functions' service-specific endpoint variable, which the AWS CLI and SDKs read too. */
export const SFN_ENDPOINT_ENV = 'AWS_ENDPOINT_URL_SFN';
export const S3_ENDPOINT_ENV = 'AWS_ENDPOINT_URL';
