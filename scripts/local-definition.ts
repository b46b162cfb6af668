/**
 * The synthesized state machine as plain Amazon States Language, for local mode (part of
 * `npm run build`, never shipped: local mode reads the file it writes): the very
 * definition the stack deploys, run by aws-local-stepfunctions with each Task state bound to
 * its handler bundle in-process (by state name). `npm run build` writes it to
 * dist/definition.json (scripts/build.ts); local mode reads that file, so the
 * installed `hopper` command needs no aws-cdk-lib.
 *
 * CloudFormation receives the definition as an `Fn::Join` of strings and `Ref` tokens for the
 * published Lambda versions the Tasks invoke. Resolving and flattening it gives the JSON; each
 * version's ARN becomes an ARN-shaped placeholder naming the version's logical id (the local
 * interpreter rejects a Resource that is not ARN-shaped, and never calls it: local handlers
 * replace every Task).
 */
import { Stack } from 'aws-cdk-lib';
import { CfnVersion } from 'aws-cdk-lib/aws-lambda';
import type { CfnStateMachine, StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import type { Hopper } from '../infra/constructs/hopper.js';
import type { AslDefinition, LocalDefinition } from '../local/emulator/definition.js';
import { TASKS, bundleName, type TaskName } from '../infra/tasks.js';

/** A placeholder Lambda ARN is this prefix followed by the logical id of the function's version. */
export const PLACEHOLDER_FUNCTION_ARN_PREFIX = 'arn:aws:lambda:us-east-1:123456789012:function:';

/** Values for the pseudo parameters a definition may contain, matching the placeholders. */
const PSEUDO_PARAMETERS: Readonly<Record<string, string>> = {
  'AWS::Partition': 'aws',
  'AWS::Region': 'us-east-1',
  'AWS::AccountId': '123456789012',
  'AWS::URLSuffix': 'amazonaws.com',
};

/** The plain ASL of a synthesized state machine. */
export function aslOf(stateMachine: StateMachine): AslDefinition {
  const cfn = stateMachine.node.defaultChild as CfnStateMachine;
  const stack = Stack.of(stateMachine);
  const versions = new Set(
    stack.node
      .findAll()
      .filter((construct) => construct instanceof CfnVersion)
      .map((version) => stack.resolve(version.logicalId) as string),
  );
  const resolved: unknown = stack.resolve(cfn.definitionString);
  return JSON.parse(flatten(resolved, versions)) as AslDefinition;
}

/**
 * The definition of the pipeline's state machine with the handler of each Task. Checks that
 * every Task state is in the registry (infra/tasks.ts) and invokes a published version of that
 * Task's own function.
 */
export function localDefinitionOf(hopper: Hopper): LocalDefinition {
  const definition = aslOf(hopper.stateMachine);
  const handlers = {} as Record<TaskName, string>;
  for (const spec of TASKS) {
    const state = definition.States[spec.name];
    if (state?.Type !== 'Task') throw new Error(`the definition has no Task state ${spec.name}`);
    const version = hopper.taskVersions[spec.name]?.node.defaultChild as CfnVersion | undefined;
    if (version === undefined) throw new Error(`Hopper has no function version for Task ${spec.name}`);
    const expected = `${PLACEHOLDER_FUNCTION_ARN_PREFIX}${Stack.of(version).resolve(version.logicalId) as string}`;
    if (state.Resource !== expected) {
      throw new Error(
        `Task ${spec.name} invokes ${String(state.Resource)}, not its own function's version ${expected}`,
      );
    }
    handlers[spec.name] = bundleName(spec.handlerFile);
  }
  const unknown = Object.entries(definition.States).filter(
    ([name, state]) => state.Type === 'Task' && !(name in handlers),
  );
  if (unknown.length > 0) {
    throw new Error(`Task states missing from infra/tasks.ts: ${unknown.map(([name]) => name).join(', ')}`);
  }
  return { definition, handlers };
}

/** The definition's text; `versions` are the logical ids of the Lambda versions it may name. */
function flatten(value: unknown, versions: ReadonlySet<string>): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'object' && value !== null) {
    const node = value as Record<string, unknown>;
    const join = node['Fn::Join'];
    if (Array.isArray(join)) {
      const [delimiter, parts] = join as [string, unknown[]];
      return parts.map((part) => flatten(part, versions)).join(delimiter);
    }
    const getAtt = node['Fn::GetAtt'];
    if (Array.isArray(getAtt) && getAtt[1] === 'Arn' && typeof getAtt[0] === 'string') {
      return `${PLACEHOLDER_FUNCTION_ARN_PREFIX}${getAtt[0]}`;
    }
    const ref = node.Ref;
    if (typeof ref === 'string' && ref in PSEUDO_PARAMETERS) return PSEUDO_PARAMETERS[ref] ?? '';
    if (typeof ref === 'string' && versions.has(ref)) return `${PLACEHOLDER_FUNCTION_ARN_PREFIX}${ref}`;
  }
  throw new Error(
    `the state machine definition holds a token local mode cannot resolve: ${JSON.stringify(value)}`,
  );
}
