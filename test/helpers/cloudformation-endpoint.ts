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
