/**
 * Acknowledging cdk-nag findings (cdk-nag 3 reads CDK's `Validations.of(x).acknowledge`).
 * Each acknowledgement names one rule, or one finding of a rule that reports several
 * (`AwsSolutions-IAM5[Resource::<Bucket.Arn>/inbox/*]`), and says why it is right here. An
 * acknowledgement covers the construct it is made on and everything under it, so make it on the
 * narrowest construct (the role, not the stack).
 */
import { Stack, Validations } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

/** Acknowledges a whole rule (`AwsSolutions-SQS3`) on `scope`. */
export function acknowledgeRule(scope: IConstruct, rule: string, reason: string): void {
  Validations.of(scope).acknowledge({ id: rule, reason });
}

/**
 * Acknowledges the IAM5 finding for one wildcard resource (a token or a plain string) in the
 * policies under `scope`. The finding's id is the resource flattened the way cdk-nag flattens
 * it, so it must be computed from the same token the policy uses.
 */
export function acknowledgeWildcardResource(scope: IConstruct, resource: string, reason: string): void {
  const flattened = flattenReference(Stack.of(scope).resolve(resource));
  Validations.of(scope).acknowledge({ id: `AwsSolutions-IAM5[Resource::${flattened}]`, reason });
}

/**
 * A resolved CloudFormation value as one string, in cdk-nag's notation: `Fn::GetAtt` as
 * `<LogicalId.Attribute>`, `Ref` as `<LogicalId>`, `Fn::Join` joined, `${x}` as `<x>`.
 */
export function flattenReference(value: unknown): string {
  if (value === undefined) return '';
  if (typeof value === 'string') return value.replace(/\$\{/g, '<').replace(/\}/g, '>');
  if (typeof value === 'object' && value !== null) {
    const node = value as Record<string, unknown>;
    const join = node['Fn::Join'];
    if (Array.isArray(join)) {
      const [delimiter, items] = join as [string, unknown[]];
      return items.map(flattenReference).join(delimiter);
    }
    if ('Fn::Sub' in node) return flattenReference(node['Fn::Sub']);
    const getAtt = node['Fn::GetAtt'];
    if (Array.isArray(getAtt)) return `<${flattenReference(getAtt[0])}.${flattenReference(getAtt[1])}>`;
    if ('Fn::ImportValue' in node) return flattenReference(node['Fn::ImportValue']);
    if ('Ref' in node) return `<${flattenReference(node.Ref)}>`;
  }
  return JSON.stringify(value);
}
