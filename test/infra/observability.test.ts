/**
 * The template's side of observability: Powertools settings on every function (the log level
 * from `-c logLevel`, checked at synth), and the dashboard's graphs of Hopper's own metrics
 * beside the AWS ones.
 */
import { describe, expect, it } from 'vitest';
import { METRIC, METRICS_NAMESPACE } from '../../lambdas/runtime/index.js';
import { synthesize, type CfnResource } from './helpers.js';

/** The environment variables of every Lambda function in the template. */
function environments(context: Readonly<Record<string, unknown>> = {}): Record<string, unknown>[] {
  const { template } = synthesize(context);
  return Object.values(template.findResources('AWS::Lambda::Function') as Record<string, CfnResource>).map(
    (fn) => (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables,
  );
}

/** An Fn::Join of strings and tokens as one string, each token as "TOKEN". */
function joined(value: unknown): string {
  if (typeof value === 'string') return value;
  const join = (value as { 'Fn::Join'?: [string, unknown[]] } | null)?.['Fn::Join'];
  if (join === undefined) return 'TOKEN';
  return join[1].map(joined).join(join[0]);
}

interface DashboardWidget {
  readonly type: string;
  readonly properties: { readonly title?: string; readonly metrics?: readonly (readonly unknown[])[] };
}

function dashboardWidgets(): DashboardWidget[] {
  const { template } = synthesize();
  const [dashboard] = Object.values(
    template.findResources('AWS::CloudWatch::Dashboard') as Record<string, CfnResource>,
  );
  const body = JSON.parse(joined(dashboard?.Properties.DashboardBody)) as { widgets: DashboardWidget[] };
  return body.widgets;
}

describe('Powertools settings', () => {
  it('every function logs at INFO by default, as service hopper, with metrics in the Hopper namespace', () => {
    const all = environments();
    expect(all).toHaveLength(12);
    for (const variables of all) {
      expect(variables).toMatchObject({
        POWERTOOLS_LOG_LEVEL: 'INFO',
        POWERTOOLS_SERVICE_NAME: 'hopper',
        POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
      });
    }
  });

  it('-c logLevel=debug sets DEBUG on every function', () => {
    const levels = environments({ logLevel: 'debug' }).map((variables) => variables.POWERTOOLS_LOG_LEVEL);
    expect(levels).toHaveLength(12);
    expect(new Set(levels)).toEqual(new Set(['DEBUG']));
  });

  it('an unknown level fails the synth, naming the levels there are', () => {
    expect(() => synthesize({ logLevel: 'LOUD' })).toThrow(
      'context logLevel: "LOUD" is not a log level; use one of TRACE, DEBUG, INFO, WARN, ERROR, CRITICAL, SILENT',
    );
  });
});

describe("the dashboard's Hopper metrics", () => {
  it('graphs every Hopper metric in its namespace, next to the Step Functions graphs of the same runs', () => {
    const widgets = dashboardWidgets();
    const metricLines = widgets.flatMap((widget) => widget.properties.metrics ?? []);
    const hopperNames = metricLines
      .filter((line) => line[0] === METRICS_NAMESPACE)
      .map((line) => line[1] as string);
    const searches = metricLines.flatMap((line) =>
      line.flatMap((part) =>
        typeof part === 'object' && part !== null && 'expression' in part ? [String(part.expression)] : [],
      ),
    );
    for (const name of Object.values(METRIC)) {
      const graphed = hopperNames.includes(name) || searches.some((search) => search.includes(`"${name}"`));
      expect(graphed, `${name} is on the dashboard`).toBe(true);
    }
    expect(searches).toEqual(
      expect.arrayContaining([
        `SEARCH('{Hopper,service,ErrorCode} MetricName="RunsFailed"', 'Sum', 300)`,
        `SEARCH('{Hopper,service,Step} MetricName="StepDuration"', 'p90', 300)`,
      ]),
    );
    // The Hopper row comes right after the AWS runs graphs, before the per-function rows.
    const titles = widgets.map((widget) => widget.properties.title);
    const awsRuns = titles.indexOf('Runs');
    const hopperRuns = titles.indexOf('Hopper runs (from the steps)');
    expect(awsRuns).toBeGreaterThanOrEqual(0);
    expect(hopperRuns).toBeGreaterThan(awsRuns);
    expect(hopperRuns).toBeLessThan(titles.indexOf('Task errors'));
  });
});
