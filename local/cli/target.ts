/**
 * Where `hopper status`, `runs`, `models` and `retry` look: a deployed stack (`--stack NAME`
 * [`--hopper ID`]: bucket, state machine, service URL and API key secret from the output each
 * Hopper construct declares (stack-hoppers.ts), with the user's normal AWS credentials) or a running `hopper local` (from the export lines it printed:
 * the names below, besides the AWS SDK's own AWS_ENDPOINT_URL, credentials and region), and how
 * those commands run against it (runTargetCommand).
 */
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { S3Client } from '@aws-sdk/client-s3';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SFNClient } from '@aws-sdk/client-sfn';
import { ENV } from '../../lambdas/runtime/index.js';
import { messageOf } from '../../lambdas/core/errors/index.js';
import { ServiceError } from '../../lambdas/service-client/index.js';
import { DEFAULT_OPTIONS as SIMULATED_DEFAULTS } from '../service/index.js';
import { chooseHopper, hoppersOf, type StackHopper } from './stack-hoppers.js';
import {
  CliUsageError,
  CommandError,
  defineCommand,
  type AwsOverrides,
  type CommandDeps,
  type Command,
  type CommandIo,
  type CommandSpec,
  type Flags,
  type Parsed,
} from './command.js';

export const HOPPER_BUCKET_ENV = 'HOPPER_BUCKET';
/** The same names the Lambda functions read (lambdas/runtime/environment.ts). */
export const HOPPER_STATE_MACHINE_ENV = ENV.stateMachineArn;
export const HOPPER_SERVICE_URL_ENV = ENV.serviceUrl;
/** Step Functions' service-specific endpoint variable, which the AWS CLI and SDKs read too. */
export const SFN_ENDPOINT_ENV = 'AWS_ENDPOINT_URL_SFN';
export const S3_ENDPOINT_ENV = 'AWS_ENDPOINT_URL';
/** CloudFormation's service-specific endpoint variable, read for --stack as the SDKs read it. */
export const CLOUDFORMATION_ENDPOINT_ENV = 'AWS_ENDPOINT_URL_CLOUDFORMATION';
/** The environment variable read when --api-key is not given (keeps the key out of `ps`). */
export const API_KEY_ENV = 'HOPPER_API_KEY';

/** The flags of every command that talks to a Hopper. */
export const TARGET_FLAGS: Flags = {
  stack: {
    value: 'NAME',
    help: 'a deployed stack (its outputs, with your AWS credentials and region); without it, the `hopper local` whose printed settings are in the environment',
  },
  hopper: {
    value: 'ID',
    help: 'with --stack, of a stack that holds several Hoppers: which one (its path in the stack, as the error without it lists them)',
  },
  json: { help: 'print JSON for scripts; an error too, as {"error": {"code", "message"}} on stdout' },
};

export { STACK_OUTPUTS } from './stack-hoppers.js';

export type { AwsOverrides, CommandDeps } from './command.js';

export interface Target {
  /** `stack NAME` or `hopper local`: for messages. */
  readonly label: string;
  readonly s3: S3Client;
  readonly bucket: string;
  /** The state machine whose executions are the runs, or null when the settings name none. */
  readonly stateMachine: { readonly client: SFNClient; readonly arn: string } | null;
  /** The training service's URL and API key (the key is read only when asked for). */
  service(): Promise<{ readonly url: string; readonly apiKey: string }>;
  /** A deployed stack's Hopper, as its outputs give it; null for `hopper local`. */
  readonly stackHopper: StackHopper | null;
}

/**
 * A command that talks to a Hopper: it finds the target (--stack or the environment), runs
 * `body`, and destroys the target's clients.
 */
export function targetCommand(
  spec: CommandSpec,
  body: (args: Parsed, target: Target, io: CommandIo, deps: CommandDeps) => Promise<number>,
): Command {
  return defineCommand(spec, async (args, io, deps) => {
    const stack = args.text('stack');
    const hopper = args.text('hopper');
    if (hopper !== undefined && stack === undefined)
      throw new CliUsageError('--hopper chooses a Hopper of a stack: give --stack NAME too');
    const target = stack === undefined ? localTarget(deps) : await stackTarget(stack, hopper, deps);
    try {
      return await body(args, target, io, deps);
    } catch (error) {
      throw explained(error, stack === undefined);
    } finally {
      target.s3.destroy();
      target.stateMachine?.client.destroy();
    }
  });
}

/**
 * What a failure means to someone running a command: above all, that the `hopper local` whose
 * settings are in the environment is no longer there (`local`: no --stack).
 */
function explained(error: unknown, local: boolean): unknown {
  const refused = local ? refusedAddress(error) : undefined;
  if (refused !== undefined) {
    return new CommandError(
      'local_mode_gone',
      `nothing answers at ${refused} (connection refused): local mode is not at that address any more. If \`hopper local\` was restarted, evaluate the export lines it printed again (it takes new ports each time it starts); if it is not running, start it`,
    );
  }
  if (!(error instanceof ServiceError)) return error;
  if (error.code === 'unauthorized') {
    return new CommandError(
      'unauthorized',
      "the training service refused the API key: check the key (HOPPER_API_KEY, or the stack's secret)",
    );
  }
  return new CommandError('service_error', `the training service failed: ${error.message}`);
}

/** The address a connection was refused at, from an error or its causes. */
function refusedAddress(error: unknown): string | undefined {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ECONNREFUSED') {
      return /ECONNREFUSED (\S+)/.exec(cause.message)?.[1] ?? 'its address';
    }
  }
  return undefined;
}

/** There is no Hopper to talk to, for the reason `message` gives. */
const noTarget = (message: string): CommandError => new CommandError('no_target', message);

function localTarget({ env, aws }: CommandDeps): Target {
  const bucket = nonEmpty(env[HOPPER_BUCKET_ENV]);
  if (bucket === undefined) {
    throw noTarget(
      `no Hopper to talk to: give --stack NAME for a deployed stack, or run \`hopper local\` and eval the export lines it prints (${HOPPER_BUCKET_ENV} is not set)`,
    );
  }
  const { AWS_ACCESS_KEY_ID: accessKeyId, AWS_SECRET_ACCESS_KEY: secretAccessKey } = env;
  const common = {
    region: nonEmpty(env.AWS_REGION) ?? 'us-east-1',
    credentials:
      accessKeyId === undefined || secretAccessKey === undefined
        ? undefined
        : { accessKeyId, secretAccessKey },
  };
  const s3Endpoint = nonEmpty(env[S3_ENDPOINT_ENV]);
  // The local S3 needs path-style addressing (local/s3/local-s3.ts); checksums are the SDK's default.
  const s3 = new S3Client({
    ...common,
    ...(s3Endpoint === undefined ? {} : { endpoint: s3Endpoint, forcePathStyle: true }),
    ...aws?.s3,
  });
  const arn = nonEmpty(env[HOPPER_STATE_MACHINE_ENV]);
  const endpoint = nonEmpty(env[SFN_ENDPOINT_ENV]);
  return {
    label: 'hopper local',
    s3,
    bucket,
    stateMachine:
      arn === undefined ? null : { client: new SFNClient({ ...common, endpoint, ...aws?.sfn }), arn },
    service: () => Promise.resolve().then(() => localService(env)),
    stackHopper: null,
  };
}

/** The training service `hopper local`'s settings name, and its key. */
function localService(env: NodeJS.ProcessEnv): { readonly url: string; readonly apiKey: string } {
  const url = nonEmpty(env[HOPPER_SERVICE_URL_ENV]);
  if (url === undefined) {
    throw noTarget(
      `${HOPPER_SERVICE_URL_ENV} is not set: eval the export lines \`hopper local\` prints, or give --stack NAME`,
    );
  }
  const apiKey = nonEmpty(env[API_KEY_ENV]) ?? simulatedKeyFor(url);
  if (apiKey === undefined)
    throw noTarget(`set ${API_KEY_ENV} to the API key of the training service at ${url}`);
  return { url, apiKey };
}

/**
 * The simulated service's key, for a service on loopback when no key is set: `hopper local`
 * starts the simulated service with its default key, and does not print it.
 */
function simulatedKeyFor(url: string): string | undefined {
  const host = new URL(url).hostname;
  return ['127.0.0.1', 'localhost', '[::1]'].includes(host) ? SIMULATED_DEFAULTS.apiKey : undefined;
}

/** What `hopper local` exports (local.ts), in the order it prints them. */
export const LOCAL_EXPORTS = [
  S3_ENDPOINT_ENV,
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_REGION',
  HOPPER_BUCKET_ENV,
  SFN_ENDPOINT_ENV,
  HOPPER_STATE_MACHINE_ENV,
  HOPPER_SERVICE_URL_ENV,
];

async function stackTarget(stack: string, id: string | undefined, deps: CommandDeps): Promise<Target> {
  const { env, aws } = deps;
  // The SDK reads the endpoint variables too: with local mode's, the stack's requests go there.
  const endpoint = [S3_ENDPOINT_ENV, SFN_ENDPOINT_ENV].find((name) => nonEmpty(env[name]) !== undefined);
  if (endpoint !== undefined && nonEmpty(env[HOPPER_BUCKET_ENV]) !== undefined) {
    throw new CommandError(
      'local_settings',
      `--stack ${stack} talks to AWS, but this shell holds the settings \`hopper local\` prints (${endpoint}=${String(env[endpoint])}), which send AWS requests to local mode: run it in a shell without them, or first: unset ${LOCAL_EXPORTS.filter((name) => env[name] !== undefined).join(' ')}`,
    );
  }
  const hopper = chooseHopper(stack, hoppersOf(await stackOutputs(stack, deps)), id);
  return {
    label: `stack ${stack}${id === undefined ? '' : ` (Hopper ${id})`}`,
    s3: new S3Client({ ...aws?.s3 }),
    bucket: hopper.bucket,
    stateMachine: { client: new SFNClient({ ...aws?.sfn }), arn: hopper.stateMachineArn },
    service: async () => ({
      url: hopper.serviceUrl,
      apiKey: await secretApiKey(hopper.apiKeySecret, aws),
    }),
    stackHopper: hopper,
  };
}

async function stackOutputs(stack: string, { env, aws }: CommandDeps): Promise<Map<string, string>> {
  const cloudformation = new CloudFormationClient({
    endpoint: nonEmpty(env[CLOUDFORMATION_ENDPOINT_ENV]),
    ...aws?.cloudformation,
  });
  try {
    const answer = await cloudformation.send(new DescribeStacksCommand({ StackName: stack }));
    const found = answer.Stacks?.[0];
    if (found === undefined) throw noTarget(`CloudFormation has no stack "${stack}"`);
    return new Map(
      (found.Outputs ?? []).flatMap(({ OutputKey: key, OutputValue: value }) =>
        key === undefined || value === undefined ? [] : [[key, value] as const],
      ),
    );
  } catch (error) {
    throw error instanceof CommandError
      ? error
      : noTarget(
          `could not read stack "${stack}" from CloudFormation (${messageOf(error)}): check --stack, AWS_REGION and your AWS credentials`,
        );
  } finally {
    cloudformation.destroy();
  }
}

/** The training service's API key, from the stack's secret. */
async function secretApiKey(secretId: string, aws: AwsOverrides | undefined): Promise<string> {
  const secrets = new SecretsManagerClient({ ...aws?.secretsmanager });
  try {
    const secret = await secrets.send(new GetSecretValueCommand({ SecretId: secretId }));
    const apiKey = secret.SecretString?.trim() ?? '';
    if (apiKey === '') throw noTarget(`the secret ${secretId} holds no API key: put the key in it`);
    return apiKey;
  } catch (error) {
    // The SDK's message names the secret and the failure, never its value.
    throw error instanceof CommandError
      ? error
      : noTarget(`could not read the API key from the secret ${secretId}: ${messageOf(error)}`);
  } finally {
    secrets.destroy();
  }
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}
