/**
 * AWS list prices Hopper uses to estimate what a run cost (the `summary.aws_usd` of
 * status/<drop>.json and model.json). US East (N. Virginia), on-demand, no free tier, no
 * savings plans: an estimate of the marginal cost of one run, not a bill.
 *
 * Sources, checked on PRICES_AS_OF:
 * - Step Functions Standard: $0.025 per 1,000 state transitions, retries included
 *   (https://aws.amazon.com/step-functions/pricing/).
 * - Lambda, Arm (Hopper's functions are arm64), first pricing tier: $0.0000133334 per GB-second
 *   and $0.20 per 1M requests (https://aws.amazon.com/lambda/pricing/, as published in 2024-2025).
 * - S3 Standard requests: PUT, COPY, POST, LIST $0.005 per 1,000; GET, HEAD and the rest $0.0004
 *   per 1,000; DELETE free (https://aws.amazon.com/s3/pricing/, as published in 2024-2025).
 * Update the figures and the date together; docs/operations.md repeats them.
 */

/** When the prices below were last checked against the sources above. */
export const PRICES_AS_OF = '2026-11-25';

/** Where the prices apply: the summary says so, since other regions differ. */
export const PRICES_REGION = 'us-east-1';

export const PRICES_USD = {
  stepFunctionsTransition: 0.025 / 1000,
  lambdaGbSecondArm: 0.0000133334,
  lambdaRequest: 0.2 / 1_000_000,
  s3PutRequest: 0.005 / 1000,
  s3GetRequest: 0.0004 / 1000,
} as const;
