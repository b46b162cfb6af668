/**
 * A deploy during a run does not change the code the run executes: every Task state invokes a
 * published version of its function, a change to a function publishes a new version (and a new
 * definition) while the old version stays, and the state machine's role may invoke every version.
 * Step Functions runs an execution on the definition it started with, so an execution started
 * before a deploy keeps invoking the versions, and so the state shape, it started with
 * (docs/deploy.md#a-deploy-during-a-run).
 */
import { describe, expect, it } from 'vitest';
import { aslOf, PLACEHOLDER_FUNCTION_ARN_PREFIX } from '../../scripts/local-definition.js';
import { TASKS } from '../../infra/tasks.js';
import { flattenReference } from '../../infra/nag.js';
import {
  actionsOf,
  EXISTING_RESOURCES,
  functionNamed,
  resourcesOf,
  synthesize,
  type CfnResource,
  type Statement,
} from './helpers.js';

interface VersionResource extends CfnResource {
  readonly DeletionPolicy?: string;
  readonly UpdateReplacePolicy?: string;
}

/** The version each Task state invokes, by Task name: its logical id and resource. */
function invokedVersions(context: Readonly<Record<string, unknown>>) {
  const { stack, template } = synthesize(context);
  const definition = aslOf(stack.hopper.stateMachine);
  const versions = template.findResources('AWS::Lambda::Version') as Record<string, VersionResource>;
  return {
    template,
    tasks: TASKS.map((task) => {
      const resource = definition.States[task.name]?.Resource ?? '';
      const id = resource.slice(PLACEHOLDER_FUNCTION_ARN_PREFIX.length);
      return { name: task.name, id, version: versions[id] };
    }),
  };
}

const before = invokedVersions({ serviceUrl: EXISTING_RESOURCES.serviceUrl });
// The next deploy changes what every function runs (here its environment, the log level every
// function has; new code is the same for Lambda: both are part of a published version).
const after = invokedVersions({ serviceUrl: EXISTING_RESOURCES.serviceUrl, logLevel: 'DEBUG' });

describe('a deploy during a run', () => {
  it('every Task state invokes a published version of its own function, kept when replaced', () => {
    for (const { name, id, version } of before.tasks) {
      expect({ name, version: version?.Type }).toEqual({ name, version: 'AWS::Lambda::Version' });
      const fn = functionNamed(before.template, name);
      expect(version?.Properties.FunctionName).toEqual({ Ref: fn.id });
      // CloudFormation does not delete the old version when the next deploy replaces it.
      expect({ id, deletion: version?.DeletionPolicy, replace: version?.UpdateReplacePolicy }).toEqual({
        id,
        deletion: 'RetainExceptOnCreate',
        replace: 'Retain',
      });
    }
  });

  it('a changed function gets a new version and the definition names it; the old one is not reused', () => {
    for (const task of TASKS) {
      const old = before.tasks.find((entry) => entry.name === task.name)!;
      const next = after.tasks.find((entry) => entry.name === task.name)!;
      expect(next.id, task.name).not.toBe(old.id);
      expect(next.version, task.name).toBeDefined();
    }
  });

  it("the state machine's role may invoke every version of each Task's function, none of another", () => {
    const machine = Object.values(
      before.template.findResources('AWS::StepFunctions::StateMachine') as Record<string, CfnResource>,
    )[0]!;
    const roleId = (machine.Properties.RoleArn as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
    const statements = Object.values(
      before.template.findResources('AWS::IAM::Policy') as Record<string, CfnResource>,
    )
      .filter((policy) =>
        (policy.Properties.Roles as unknown[]).some((role) => (role as { Ref?: string }).Ref === roleId),
      )
      .flatMap((policy) => (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement)
      .filter((statement) => actionsOf(statement).includes('lambda:InvokeFunction'));
    const invocable = new Set(statements.flatMap(resourcesOf).map(flattenReference));
    for (const task of TASKS) {
      const fn = functionNamed(before.template, task.name);
      expect(invocable.has(`<${fn.id}.Arn>:*`), task.name).toBe(true);
    }
    const functionIds = new Set(TASKS.map((task) => functionNamed(before.template, task.name).id));
    for (const resource of invocable) {
      const named = /^<([A-Za-z0-9]+?)(?:\.Arn)?>/.exec(resource)?.[1] ?? resource;
      const owner = [...functionIds].find((id) => named.startsWith(id.replace(/[0-9A-F]{8}$/, '')));
      expect(owner, resource).toBeDefined();
    }
  });
});

/** A resource's policies, as CloudFormation applies them on delete and on replacement. */
interface PolicedResource {
  readonly Type: string;
  readonly Properties?: Record<string, unknown>;
  readonly DeletionPolicy?: string;
  readonly UpdateReplacePolicy?: string;
}

function resourcesWithPolicies(context: Readonly<Record<string, unknown>>): [string, PolicedResource][] {
  const { template } = synthesize(context);
  return Object.entries((template.toJSON() as { Resources: Record<string, PolicedResource> }).Resources);
}

describe('what a failed deploy or a delete leaves behind (docs/deploy.md)', () => {
  const created = resourcesWithPolicies({ serviceUrl: EXISTING_RESOURCES.serviceUrl });

  it('what Hopper keeps is kept on update and delete, and removed when the first create rolls back', () => {
    const kept = created.filter(([, resource]) => resource.UpdateReplacePolicy === 'Retain');
    // A plain Retain would also keep them after a failed first create: orphans of a stack that never was.
    expect(created.filter(([, resource]) => resource.DeletionPolicy === 'Retain').map(([id]) => id)).toEqual(
      [],
    );
    for (const [id, resource] of kept)
      expect({ id, deletion: resource.DeletionPolicy }).toEqual({ id, deletion: 'RetainExceptOnCreate' });
    const keptTypes = new Set(kept.map(([, resource]) => resource.Type));
    expect([...keptTypes].sort()).toEqual([
      'AWS::Lambda::Version',
      'AWS::Logs::LogGroup',
      'AWS::S3::Bucket',
      'AWS::SecretsManager::Secret',
    ]);
    expect(kept.filter(([, resource]) => resource.Type === 'AWS::S3::Bucket')).toHaveLength(2);
    // Every function's log group and the state machine's.
    expect(kept.filter(([, resource]) => resource.Type === 'AWS::Logs::LogGroup')).toHaveLength(
      TASKS.length + 2,
    );
  });

  it('the API key secret a stack creates outlives a delete or a move to another logical id', () => {
    const secrets = created.filter(([, resource]) => resource.Type === 'AWS::SecretsManager::Secret');
    expect(secrets).toHaveLength(1);
    const [, secret] = secrets[0]!;
    expect({ deletion: secret.DeletionPolicy, replace: secret.UpdateReplacePolicy }).toEqual({
      deletion: 'RetainExceptOnCreate',
      replace: 'Retain',
    });
    // Its name does not follow its logical id, so a refactored template names the same secret (the
    // deploy then stops on the name, with the key intact; docs/deploy.md says how to adopt it).
    expect(JSON.stringify(secret.Properties?.Name)).not.toContain(secrets[0]![0]);
  });

  it('adopting the kept secret by name (-c apiKeySecretName) creates none, so the old one leaves the stack kept', () => {
    const adopted = resourcesWithPolicies({
      serviceUrl: EXISTING_RESOURCES.serviceUrl,
      apiKeySecretName: EXISTING_RESOURCES.apiKeySecretName,
    });
    expect(adopted.filter(([, resource]) => resource.Type === 'AWS::SecretsManager::Secret')).toEqual([]);
  });
});
