/**
 * docs/operations.md, "What it costs": the standing cost table counts what a Hopper with default
 * props bills monthly, as its template holds it, and the lean props (`dashboard: false`,
 * `throttleAlarms: false`) leave out what the second table says, at the figures it gives.
 */
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { Hopper, type HopperProps } from '../../infra/index.js';
import { SKIP_BUNDLING } from './helpers.js';

const OPERATIONS = await readFile(new URL('../../docs/operations.md', import.meta.url), 'utf8');
const COST = OPERATIONS.slice(OPERATIONS.indexOf('## What it costs'));

/** The cells of each row of the table right after `heading`'s line, header and rule left out. */
function tableAfter(heading: string): string[][] {
  const lines = COST.slice(COST.indexOf(heading)).split('\n');
  const start = lines.findIndex((line) => line.startsWith('|'));
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );
  }
  return rows;
}

function countsOf(props: Partial<HopperProps>): Record<string, number> {
  const app = new App({ context: SKIP_BUNDLING });
  const stack = new Stack(app, 'Costed');
  new Hopper(stack, 'Training', { serviceUrl: 'https://training.example.com', ...props });
  const resources = Template.fromStack(stack).toJSON() as { Resources: Record<string, { Type: string }> };
  const counts: Record<string, number> = {};
  for (const { Type } of Object.values(resources.Resources)) counts[Type] = (counts[Type] ?? 0) + 1;
  return counts;
}

const dollars = (cell: string): number => Number(/\$([\d.]+)/.exec(cell)?.[1]);

describe('the standing cost in docs/operations.md', () => {
  const defaults = countsOf({});

  it('counts what the template of a Hopper with default props holds, at count × price', () => {
    const rows = tableAfter('### Standing cost');
    const byType: [RegExp, string][] = [
      [/^CloudWatch alarms/, 'AWS::CloudWatch::Alarm'],
      [/^CloudWatch composite alarm/, 'AWS::CloudWatch::CompositeAlarm'],
      [/^CloudWatch dashboard/, 'AWS::CloudWatch::Dashboard'],
      [/^KMS keys/, 'AWS::KMS::Key'],
      [/^Secrets Manager secret/, 'AWS::SecretsManager::Secret'],
    ];
    let total = 0;
    for (const [label, type] of byType) {
      const row = rows.find(([name]) => label.test(name ?? ''));
      expect(row, String(label)).toBeDefined();
      const [, count, price, perMonth] = row!;
      expect(Number(count), type).toBe(defaults[type] ?? 0);
      expect(dollars(perMonth!)).toBeCloseTo(Number(count) * dollars(price!), 6);
      total += dollars(perMonth!);
    }
    expect(dollars(rows.at(-1)![3]!)).toBeCloseTo(total, 6);
    expect(COST).toContain(`the log groups (${String(defaults['AWS::Logs::LogGroup'])}:`);
  });

  it('of the lean props leaves out the dashboard, the throttle alarms and their composite', () => {
    const [standard, lean] = tableAfter('### A leaner Hopper');
    const leanCounts = countsOf({ dashboard: false, throttleAlarms: false });
    for (const [row, counts] of [
      [standard!, defaults],
      [lean!, leanCounts],
    ] as const) {
      expect(row.slice(1, 4).map(Number)).toEqual([
        counts['AWS::CloudWatch::Alarm'] ?? 0,
        counts['AWS::CloudWatch::CompositeAlarm'] ?? 0,
        counts['AWS::CloudWatch::Dashboard'] ?? 0,
      ]);
    }
    // Only the monitoring changes: the functions and the state machine are all there.
    expect(leanCounts['AWS::Lambda::Function']).toBe(defaults['AWS::Lambda::Function']);
    expect(leanCounts['AWS::CloudWatch::Alarm']).toBe(10);
    // $0.10 an alarm, $1 a key, $0.40 the secret.
    expect(dollars(lean![4]!)).toBeCloseTo(10 * 0.1 + 2 + 0.4, 6);
  });
});
