/**
 * A loopback stand-in for SNS's GetTopicAttributes (query protocol: a form-encoded POST, an XML
 * answer), holding the topics it is given. The real SDK client talks to it over HTTP, as
 * `hopper doctor --stack NAME` does to SNS.
 */
import { createServer } from 'node:http';
import { listenOnLoopback } from './loopback.js';

export interface SnsEndpoint {
  readonly url: string;
  /** The TopicArn of every GetTopicAttributes asked, in order. */
  readonly asked: string[];
  close(): Promise<void>;
}

const NAMESPACE = 'http://sns.amazonaws.com/doc/2010-03-31/';

/** `topics`: each topic's ARN and its number of confirmed subscriptions. */
export async function startSnsEndpoint(topics: Readonly<Record<string, number>>): Promise<SnsEndpoint> {
  const asked: string[] = [];
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => {
      const form = new URLSearchParams(text);
      const arn = form.get('TopicArn') ?? '';
      if (form.get('Action') === 'GetTopicAttributes') asked.push(arn);
      res.setHeader('content-type', 'text/xml');
      const confirmed = topics[arn];
      if (form.get('Action') !== 'GetTopicAttributes' || confirmed === undefined) {
        res.statusCode = 404;
        res.end(
          `<ErrorResponse xmlns="${NAMESPACE}"><Error><Type>Sender</Type><Code>NotFound</Code>` +
            `<Message>Topic does not exist</Message></Error><RequestId>r-1</RequestId></ErrorResponse>`,
        );
        return;
      }
      const entry = (key: string, value: string) => `<entry><key>${key}</key><value>${value}</value></entry>`;
      res.end(
        `<GetTopicAttributesResponse xmlns="${NAMESPACE}"><GetTopicAttributesResult><Attributes>` +
          entry('TopicArn', arn) +
          entry('SubscriptionsConfirmed', String(confirmed)) +
          `</Attributes></GetTopicAttributesResult>` +
          `<ResponseMetadata><RequestId>r-1</RequestId></ResponseMetadata></GetTopicAttributesResponse>`,
      );
    });
  });
  return { ...(await listenOnLoopback(server)), asked };
}
