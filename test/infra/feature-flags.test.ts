/**
 * The Hopper construct is correct under CDK's defaults: in a fresh App with none of this
 * repository's cdk.json feature flags it synthesizes, passes cdk-nag's AwsSolutions checks, and
 * gives the same template as with the flags, but for what the flags only name or order differently
 * (Lambda versions' logical ids, how IAM statements are merged). Where Hopper relies on a
 * behaviour a flag would give, it sets it on its own resources (storage.ts: access log delivery
 * under a bucket policy).
 */
import { App, Stack, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { Hopper } from '../../infra/index.js';
import { cdkJsonContext } from '../../infra/hopper-app.js';

interface Resource {
  Type: string;
  Properties?: { PolicyDocument?: { Statement: { Action: string | string[] }[] } } & Record<string, unknown>;
}

function synthesize(context: Record<string, unknown>, nag = false): Record<string, Resource> {
  const app = new App({ context });
  if (nag) Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  const stack = new Stack(app, 'Team');
  new Hopper(stack, 'Training', { serviceUrl: 'https://training.example.com', creditBudget: { perDay: 5 } });
  if (nag) app.synth();
  return (Template.fromStack(stack).toJSON() as { Resources: Record<string, Resource> }).Resources;
}

/** A Lambda version's logical id without the hash of its function's properties. */
const VERSION_HASH = /(CurrentVersion[0-9A-F]{8})[0-9a-f]{32}/g;

/** The template with version ids unhashed and each IAM policy as the sorted actions it grants. */
function normalized(resources: Record<string, Resource>): unknown {
  const text = JSON.stringify(resources).replace(VERSION_HASH, '$1');
  const parsed = JSON.parse(text) as Record<string, Resource>;
  for (const resource of Object.values(parsed)) {
    const document = resource.Properties?.PolicyDocument;
    if (resource.Type !== 'AWS::IAM::Policy' || document === undefined) continue;
    const actions = document.Statement.flatMap((statement) => [statement.Action].flat());
    resource.Properties = {
      ...resource.Properties,
      PolicyDocument: { Statement: [] },
      actions: [...new Set(actions)].sort(),
    };
  }
  return parsed;
}

describe('Hopper in an app without feature flags', () => {
  it('synthesizes with no AwsSolutions finding', () => {
    expect(() => synthesize({}, true)).not.toThrow();
  }, 120_000);

  it('gives the template it gives under the repository flags, but for names and statement order', () => {
    const withFlags = synthesize(cdkJsonContext());
    const without = synthesize({});
    const versions = (resources: Record<string, Resource>): number =>
      Object.values(resources).filter((resource) => resource.Type === 'AWS::Lambda::Version').length;
    expect(versions(without)).toBe(versions(withFlags));
    const stateMachine = (resources: Record<string, Resource>): string =>
      JSON.stringify(
        Object.values(resources).find((r) => r.Type === 'AWS::StepFunctions::StateMachine'),
      ).replace(VERSION_HASH, '$1');
    expect(stateMachine(without)).toBe(stateMachine(withFlags));
    expect(normalized(without)).toEqual(normalized(withFlags));
  });
});
