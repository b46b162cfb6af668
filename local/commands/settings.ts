/**
 * The environment variables through which `hopper status`, `runs`, `models` and `retry` find a
 * running `hopper local` (it prints them as `export` lines) besides the AWS SDK's own
 * (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_SFN, credentials, region).
 */
export const HOPPER_BUCKET_ENV = 'HOPPER_BUCKET';
export const HOPPER_STATE_MACHINE_ENV = 'HOPPER_STATE_MACHINE_ARN';
export const HOPPER_SERVICE_URL_ENV = 'HOPPER_SERVICE_URL';
/** Step Functions' service-specific endpoint variable, which the AWS CLI and SDKs read too. */
export const SFN_ENDPOINT_ENV = 'AWS_ENDPOINT_URL_SFN';
export const S3_ENDPOINT_ENV = 'AWS_ENDPOINT_URL';
