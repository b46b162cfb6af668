/**
 * cdk-nag's AwsSolutions checks: no finding is left unacknowledged, in the default setup and with
 * existing resources, and every acknowledgement is narrow and says something true: an IAM5
 * acknowledgement names the one wildcard resource it covers, and that resource is really in the
 * policy of the role it is made on, next to the actions the reason names.
 */
import { Stack, Validations } from 'aws-cdk-lib';
import { CfnPolicy } from 'aws-cdk-lib/aws-iam';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { describe, expect, it } from 'vitest';
import { createHopperApp } from '../../infra/hopper-app.js';
import { addNagChecks } from '../../infra/nag-checks.js';
import { flattenReference } from '../../infra/nag.js';
import { EXISTING_RESOURCES, SKIP_BUNDLING, synthesize, type Statement } from './helpers.js';

const SETUPS = { defaults: {}, 'existing resources': EXISTING_RESOURCES } as const;

interface Acknowledgement {
  readonly scope: IConstruct;
  readonly id: string;
  readonly reason: string;
}

function acknowledgements(root: IConstruct): Acknowledgement[] {
  return root.node.findAll().flatMap((scope) =>
    scope.node.metadata
      .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
      .flatMap((entry) =>
        Object.entries(entry.data as Record<string, string>).map(([id, reason]) => ({
          scope,
          id: id.replace(/^annotation::/i, ''),
          reason,
        })),
      ),
  );
}

/** The Allow statements of the policies under `scope`, resources flattened as cdk-nag does. */
function allowStatements(scope: IConstruct): { actions: string[]; resources: string[] }[] {
  return scope.node
    .findAll()
    .filter((child): child is CfnPolicy => child instanceof CfnPolicy)
    .flatMap((policy) => {
      const document = Stack.of(policy).resolve(policy.policyDocument) as { Statement: Statement[] };
      return document.Statement.filter((statement) => statement.Effect === 'Allow').map((statement) => ({
        actions: [statement.Action].flat(),
        resources: [statement.Resource].flat().map(flattenReference),
      }));
    });
}

/** The pack with acknowledgements ignored: every finding, to tell a needed acknowledgement from a stale one. */
class UnacknowledgedChecks extends AwsSolutionsChecks {}
Object.defineProperty(UnacknowledgedChecks.prototype, 'isAcknowledged', { value: () => false });

describe.each(Object.entries(SETUPS))('cdk-nag AwsSolutions with %s', (_name, context) => {
  const { app } = synthesize(context);
  app.synth();
  const found = acknowledgements(app);

  it('finds nothing that is not acknowledged (no error, no warning)', () => {
    const report = new AwsSolutionsChecks(undefined, { verbose: true }).validateScope(app);
    const findings = report.violations.map(
      (violation) =>
        `${violation.severity} ${violation.ruleName} at ${violation.violatingResources.map((r) => r.constructPath).join(', ')}`,
    );
    expect(findings).toEqual([]);
    expect(report.success).toBe(true);
  });

  it('acknowledges on resources, never on the whole stack or app, each with a real reason', () => {
    expect(found.length).toBeGreaterThan(0);
    for (const { scope, id, reason } of found) {
      expect(Stack.isStack(scope) || scope === app, `${id} on ${scope.node.path}`).toBe(false);
      expect(id).toMatch(/^AwsSolutions-[A-Z]+\d+/);
      expect(reason.length, `${id} on ${scope.node.path}`).toBeGreaterThanOrEqual(60);
    }
  });

  it('acknowledges only findings that occur under the acknowledging construct (none is stale)', () => {
    const raw = new UnacknowledgedChecks().validateScope(app).violations;
    for (const { scope, id } of found) {
      const paths = raw
        .filter((violation) => violation.ruleName === id)
        .flatMap((violation) => violation.violatingResources.map((resource) => resource.constructPath ?? ''));
      expect(
        paths.some((path) => path.startsWith(`${scope.node.path}/`)),
        `${id} on ${scope.node.path}`,
      ).toBe(true);
    }
  });

  it("acknowledges IAM5 per wildcard resource, and only wildcards that are in that role's policy", () => {
    const iam5 = found.filter(({ id }) => id.startsWith('AwsSolutions-IAM5'));
    expect(iam5.length).toBeGreaterThan(0);
    for (const { scope, id, reason } of iam5) {
      const resource = /^AwsSolutions-IAM5\[Resource::(.+)\]$/.exec(id)?.[1];
      expect(resource, `${id} must name its resource`).toBeDefined();
      const granting = allowStatements(scope).filter((statement) => statement.resources.includes(resource!));
      expect(granting.length, `${id} on ${scope.node.path}`).toBeGreaterThan(0);
      if (resource === '*') {
        // Only services without resource-level permissions may have "*", as the reasons say.
        const actions = granting.flatMap((statement) => statement.actions);
        for (const action of actions) expect(action).toMatch(/^(xray|logs):/);
        for (const action of actions) expect(reason).toContain(action.split(':')[1]!);
      } else {
        // Objects under an area, a function's versions, the state machine's executions.
        expect(resource).toMatch(
          /(\/(inbox|status|models|status\/\.doctor)\/\*|\.Arn>:\*|:execution:<\w+\.Name>:\*)$/,
        );
      }
    }
  });
});

describe('the CLI app', () => {
  it('synthesizes with cdk-nag registered as a validation plugin and reports no violation', () => {
    const { app } = createHopperApp({ cloudFormationValidation: false, context: SKIP_BUNDLING });
    addNagChecks(app);
    expect(() => app.synth()).not.toThrow();
  });
});
