/**
 * The Hoppers of a deployed stack, from its outputs: each Hopper construct declares one output
 * whose value is a JSON object marked `"hopper": <its path in the stack>` (infra/constructs/
 * hopper.ts), so a team's own stack needs no outputs added by hand and may hold several. A stack
 * deployed with 0.2.0 has no such output; its four outputs of Hopper's own stack still serve.
 */
import { z } from 'zod';
import { CommandError, EXIT } from './command.js';

/** What a command needs of one Hopper of a stack. */
export interface StackHopper {
  /** Its path in the stack (`Training`, `Team-Search`): what --hopper takes. */
  readonly id: string;
  readonly bucket: string;
  readonly stateMachineArn: string;
  readonly serviceUrl: string;
  /** The API key secret's ARN, or its name. */
  readonly apiKeySecret: string;
  /** Undefined for a Hopper made with `dashboard: false`. */
  readonly dashboard?: string;
  /** The alarm topic's ARN; undefined for a Hopper deployed before hopper-cdk 0.3 declared it. */
  readonly alarmTopic?: string;
}

/** The output each Hopper construct declares (its value). */
const HopperOutput = z.object({
  hopper: z.string().min(1),
  bucket: z.string().min(1),
  stateMachineArn: z.string().min(1),
  serviceUrl: z.string().min(1),
  apiKeySecret: z.string().min(1),
  dashboard: z.string().min(1).optional(),
  alarmTopic: z.string().min(1).optional(),
});

/** The outputs of Hopper's own stack (infra/stack.ts) the commands read in 0.2.0. */
export const STACK_OUTPUTS = {
  bucket: 'BucketName',
  stateMachine: 'StateMachineArn',
  apiKeySecret: 'ApiKeySecretName',
  serviceUrl: 'TrainingServiceUrl',
} as const;

/** Every Hopper the outputs name, in the order of their output keys. */
export function hoppersOf(outputs: ReadonlyMap<string, string>): StackHopper[] {
  const found = [...outputs]
    .sort(([a], [b]) => a.localeCompare(b))
    .flatMap(([, value]) => {
      const parsed = HopperOutput.safeParse(jsonOrNull(value));
      if (!parsed.success) return [];
      const { hopper: id, ...rest } = parsed.data;
      return [{ id, ...rest }];
    });
  return found.length > 0 ? found : ownStackHopper(outputs);
}

function jsonOrNull(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

/** The Hopper of a stack deployed with 0.2.0 of Hopper's own app, from its four outputs. */
function ownStackHopper(outputs: ReadonlyMap<string, string>): StackHopper[] {
  const [bucket, stateMachineArn, apiKeySecret, serviceUrl] = [
    STACK_OUTPUTS.bucket,
    STACK_OUTPUTS.stateMachine,
    STACK_OUTPUTS.apiKeySecret,
    STACK_OUTPUTS.serviceUrl,
  ].map((key) => outputs.get(key));
  if (bucket === undefined || stateMachineArn === undefined) return [];
  if (apiKeySecret === undefined || serviceUrl === undefined) return [];
  const dashboard = /#dashboards:name=(.+)$/.exec(outputs.get('DashboardUrl') ?? '')?.[1];
  return [{ id: 'Hopper', bucket, stateMachineArn, apiKeySecret, serviceUrl, dashboard }];
}

/** The Hopper `--hopper` names, or the stack's only one. */
export function chooseHopper(stack: string, hoppers: readonly StackHopper[], id?: string): StackHopper {
  const ids = hoppers.map((hopper) => hopper.id).join(', ');
  if (hoppers.length === 0) {
    throw new CommandError(
      'no_target',
      `stack "${stack}" holds no Hopper: none of its outputs is a Hopper construct's (hopper-cdk 0.3 or later declares one), nor does it have the outputs ${Object.values(STACK_OUTPUTS).join(', ')} of Hopper's own stack`,
    );
  }
  const [only, ...others] = hoppers;
  if (id === undefined) {
    if (only !== undefined && others.length === 0) return only;
    throw new CommandError(
      'several_hoppers',
      `stack "${stack}" holds ${String(hoppers.length)} Hoppers: choose one with --hopper ID (${ids})`,
      EXIT.usage,
    );
  }
  const chosen = hoppers.find((hopper) => hopper.id === id);
  if (chosen !== undefined) return chosen;
  throw new CommandError(
    'no_target',
    `stack "${stack}" holds no Hopper "${id}": it holds ${ids}`,
    EXIT.usage,
  );
}

/** The AWS console pages of a Hopper: its runs, its dashboard, its bucket. */
export function consoleLinks(hopper: StackHopper): Record<string, string> {
  // The state machine's ARN names its region: arn:aws:states:<region>:<account>:stateMachine:<name>.
  const region = hopper.stateMachineArn.split(':')[3] ?? '';
  const console = `https://${region}.console.aws.amazon.com`;
  return {
    stateMachine: `${console}/states/home?region=${region}#/statemachines/view/${hopper.stateMachineArn}`,
    ...(hopper.dashboard === undefined
      ? {}
      : { dashboard: `${console}/cloudwatch/home?region=${region}#dashboards:name=${hopper.dashboard}` }),
    bucket: `https://s3.console.aws.amazon.com/s3/buckets/${hopper.bucket}?region=${region}`,
  };
}
