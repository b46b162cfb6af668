/**
 * The operator's docs (docs/deploy.md, docs/operations.md) against what the stack really is: its
 * events, alarms, settings, keys, lifecycle and metrics, the permissions an operator needs, and
 * the Node versions package.json accepts. Each check reads the fact from the code, not a copy.
 */
import { readFileSync } from 'node:fs';
import { Alarm, Metric } from 'aws-cdk-lib/aws-cloudwatch';
import { describe, expect, it } from 'vitest';
import { CONTEXT_KEYS } from '../../infra/config.js';
import { STORAGE_DEFAULTS } from '../../infra/constructs/storage.js';
import { RUN_EVENT_TYPES } from '../../lambdas/records/events/index.js';
import { METRIC } from '../../lambdas/runtime/index.js';
import { synthesize, type CfnResource } from './helpers.js';

const read = (path: string): string => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
const deploy = read('docs/deploy.md');
const operations = read('docs/operations.md');
const { stack, template } = synthesize();

/** The text under a heading, up to the next heading of the same or a higher level. */
function section(text: string, heading: string): string {
  const start = text.indexOf(`${heading}\n`);
  expect(start, heading).toBeGreaterThanOrEqual(0);
  const level = /^#+/.exec(heading)![0];
  const rest = text.slice(start + heading.length);
  const end = rest.search(new RegExp(`\\n#{1,${String(level.length)}} `));
  return end === -1 ? rest : rest.slice(0, end);
}

/** The first cells of a markdown table's rows: `| \`Name\` | ...` gives Name. */
function rowNames(text: string): string[] {
  return [...text.matchAll(/^\| `([^`]+)`/gm)].map((match) => match[1]!);
}

/** Paragraphs and list items as single lines. */
function flat(text: string): string {
  return text.replace(/\s+/g, ' ');
}

describe('docs/operations.md: the run events', () => {
  const events = section(operations, '## Events');
  const types = Object.values(RUN_EVENT_TYPES);

  it('has a row for every event Hopper puts, and names every kind in event_id and state', () => {
    expect(rowNames(events).filter((name) => name.startsWith('Hopper Run'))).toEqual(types);
    const fields = flat(events);
    for (const kind of Object.keys(RUN_EVENT_TYPES).filter((kind) => kind !== 'started')) {
      expect(fields, kind).toMatch(new RegExp(`\`event_id\` \\|[^|]*\`/${kind}\``));
      expect(fields, kind).toMatch(new RegExp(`\`state\` \\|[^|]*\`${kind}\``));
    }
  });

  it('says which events the notifications send: the ones the rule matches', () => {
    const [rule] = Object.values(template.findResources('AWS::Events::Rule') as Record<string, CfnResource>)
      .map((resource) => resource.Properties.EventPattern as { source: string[]; 'detail-type'?: string[] })
      .filter((pattern) => pattern.source[0] === 'hopper');
    const notified = rule!['detail-type']!;
    const wiring = flat(section(operations, '## Notifications'));
    expect(notified).toEqual(types.filter((type) => type !== RUN_EVENT_TYPES.started));
    for (const type of notified) expect(wiring, type).toContain(`\`${type}\``);
    // docs/deploy.md's eventSource setting names them too.
    const eventSource = deploy.split('\n').find((line) => line.startsWith('| `eventSource`'))!;
    for (const type of types) expect(eventSource, type).toContain(`\`${type}\``);
  });
});

describe('docs/deploy.md: the alarms, the settings and what deploys', () => {
  const alarms = section(deploy, '## The alarms');

  it('has a row for every alarm that notifies, and operations.md lists the same', () => {
    const names = Object.keys(stack.hopper.alarms).sort();
    expect(rowNames(alarms).sort()).toEqual(names);
    const listed = flat(section(operations, '## The dashboard and the alarms'));
    for (const name of names) expect(listed, name).toContain(`\`${name}\``);
  });

  it('says that an alarm on a dead-letter queue stays in ALARM until the queue is drained', () => {
    const queueAlarms = Object.entries(stack.hopper.alarms)
      .filter(
        ([, alarm]) =>
          alarm instanceof Alarm &&
          alarm.metric instanceof Metric &&
          alarm.metric.metricName === 'ApproximateNumberOfMessagesVisible',
      )
      .map(([name]) => name);
    expect(queueAlarms).toHaveLength(2);
    for (const name of queueAlarms) {
      const row = alarms.split('\n').find((line) => line.startsWith(`| \`${name}\``))!;
      expect(row, name).toContain('stays in ALARM until the queue is empty');
    }
  });

  it('has a row for every context key', () => {
    expect(rowNames(section(deploy, '## Settings')).sort()).toEqual([...CONTEXT_KEYS].sort());
  });

  it('gives the Node.js versions package.json accepts', () => {
    const engines = (JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node;
    const versions = engines.match(/\d+(\.\d+)*/g)!.map((version) => version.replace(/(\.0)+$/, ''));
    const prerequisite = flat(section(deploy, '## Prerequisites')).split(' - ')[1]!;
    expect(versions.length).toBeGreaterThan(1);
    for (const version of versions) expect(prerequisite, version).toContain(version);
  });

  it('names every KMS key the stack creates where it says what cdk destroy leaves', () => {
    const destroy = flat(
      deploy.slice(deploy.indexOf('`npx cdk destroy` removes the stack.')).split('\n\n')[0]!,
    );
    const keys = Object.values(template.findResources('AWS::KMS::Key') as Record<string, CfnResource>);
    expect(keys).toHaveLength(2);
    for (const key of keys) {
      const purpose = String(key.Properties.Description).replace('Hopper: encrypts ', '');
      expect(destroy, purpose).toContain(purpose);
    }
  });

  it('gives the abort of unfinished uploads the new bucket has', () => {
    const days: number = STORAGE_DEFAULTS.abortIncompleteUploadsAfterDays;
    expect(flat(deploy)).toContain(
      `aborts unfinished multipart uploads after ${String(days)} day${days === 1 ? '' : 's'}`,
    );
  });

  it('counts the behaviours a first deployment should confirm as it lists them', () => {
    const confirm = section(deploy, '## What a first deployment should confirm');
    const words = ['two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];
    const said = new RegExp(`(${words.join('|')}) behaviours of AWS itself`).exec(flat(confirm))?.[1];
    const listed = confirm.split('\n').filter((line) => line.startsWith('- **')).length;
    expect(said).toBe(words[listed - 2]);
  });
});

describe('docs/operations.md: metrics and the permissions of the CLI', () => {
  it('names every Hopper metric', () => {
    const dashboard = section(operations, '## The dashboard and the alarms');
    for (const name of Object.values(METRIC)) expect(dashboard, name).toContain(`\`${name}\``);
  });

  it('grants states:DescribeExecution on the executions, whose ARNs the sample event shows', () => {
    const text = flat(operations);
    const grant = /`states:DescribeExecution` on (?:the executions, )?`([^`]+)`/.exec(text)?.[1];
    expect(grant).toBeDefined();
    const sample = /"execution_arn": "([^"]+)"/.exec(operations)![1]!;
    const pattern = new RegExp(`^${grant!.replace(/<[^>]+>/g, '[^:]+').replace(/\*/g, '.*')}$`);
    expect(sample).toMatch(pattern);
    expect(grant).toContain(':execution:');
  });
});
