/**
 * A loopback stand-in for CloudFormation's DescribeStacks (query protocol: a form-encoded POST,
 * an XML answer), holding the outputs of the stacks it is given. The real SDK client talks to
 * it over HTTP, as `hopper <command> --stack NAME` does to CloudFormation.
 */
import { createServer } from 'node:http';
import { listenOnLoopback } from './loopback.js';

export interface CloudFormationEndpoint {
  readonly url: string;
  /** The Action of every request, in order. */
  readonly actions: string[];
  close(): Promise<void>;
}

const NAMESPACE = 'http://cloudformation.amazonaws.com/doc/2010-05-15/';

export async function startCloudFormationEndpoint(
  stacks: Readonly<Record<string, Readonly<Record<string, string>>>>,
): Promise<CloudFormationEndpoint> {
  const actions: string[] = [];
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => {
      const form = new URLSearchParams(text);
      const action = form.get('Action') ?? '';
      actions.push(action);
      const name = form.get('StackName') ?? '';
      const outputs = stacks[name];
      res.setHeader('content-type', 'text/xml');
      if (action !== 'DescribeStacks' || outputs === undefined) {
        res.statusCode = 400;
        res.end(
          `<ErrorResponse xmlns="${NAMESPACE}"><Error><Type>Sender</Type><Code>ValidationError</Code>` +
            `<Message>Stack with id ${escape(name)} does not exist</Message></Error><RequestId>r-1</RequestId></ErrorResponse>`,
        );
        return;
      }
      const members = Object.entries(outputs)
        .map(
          ([key, value]) =>
            `<member><OutputKey>${escape(key)}</OutputKey><OutputValue>${escape(value)}</OutputValue></member>`,
        )
        .join('');
      res.end(
        `<DescribeStacksResponse xmlns="${NAMESPACE}"><DescribeStacksResult><Stacks><member>` +
          `<StackName>${escape(name)}</StackName>` +
          `<StackId>arn:aws:cloudformation:us-east-1:123456789012:stack/${escape(name)}/1</StackId>` +
          `<CreationTime>2026-01-01T00:00:00Z</CreationTime><StackStatus>CREATE_COMPLETE</StackStatus>` +
          `<Outputs>${members}</Outputs></member></Stacks></DescribeStacksResult>` +
          `<ResponseMetadata><RequestId>r-1</RequestId></ResponseMetadata></DescribeStacksResponse>`,
      );
    });
  });
  return { ...(await listenOnLoopback(server)), actions };
}

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** A synthesized template's parts that outputsOfTemplate reads. */
export interface OutputTemplate {
  readonly Resources: Record<
    string,
    { readonly Type: string; readonly Properties?: Record<string, unknown> }
  >;
  readonly Outputs?: Record<string, { readonly Value: unknown }>;
}

/**
 * The outputs a deployment of `template` would have, as DescribeStacks answers them: each value
 * evaluated with the pseudo parameters given (`AWS::Region`, `AWS::StackId`, ...), a Ref to one of
 * the template's resources as `refOf` says (its physical id), and a named resource's name property.
 */
export function outputsOfTemplate(
  template: OutputTemplate,
  pseudo: Readonly<Record<string, string>>,
  refOf: (logicalId: string, type: string) => string,
): Record<string, string> {
  const evaluate = (value: unknown): string => {
    if (typeof value === 'string') return value;
    const node = value as Record<string, unknown>;
    const ref = node.Ref;
    if (typeof ref === 'string') {
      const resource = template.Resources[ref];
      if (resource === undefined) return pseudo[ref] ?? fail(value);
      // A dashboard's Ref is its name: the one the template gives it.
      const named = resource.Properties?.DashboardName;
      return named === undefined ? refOf(ref, resource.Type) : evaluate(named);
    }
    const join = node['Fn::Join'] as [string, unknown[]] | undefined;
    if (join !== undefined) return join[1].map(evaluate).join(join[0]);
    const select = node['Fn::Select'] as [number, unknown] | undefined;
    const split = (select?.[1] as Record<string, unknown> | undefined)?.['Fn::Split'] as
      [string, unknown] | undefined;
    if (select !== undefined && split !== undefined)
      return evaluate(split[1]).split(split[0])[select[0]] ?? fail(value);
    return fail(value);
  };
  return Object.fromEntries(
    Object.entries(template.Outputs ?? {}).map(([key, output]) => [key, evaluate(output.Value)]),
  );
}

function fail(value: unknown): never {
  throw new Error(`outputsOfTemplate cannot evaluate ${JSON.stringify(value)}`);
}
