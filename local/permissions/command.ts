/**
 * `hopper permissions [--template FILE] [--json]`: proves that the role a synthesized template
 * gives each Hopper function allows every AWS call that function makes, and grants nothing more
 * (local/permissions/). Without --template it checks Hopper's own stack, as `npm run build`
 * synthesized it (dist/hopper.template.json).
 *
 * The IAM policy simulator it runs, @cloud-copilot/iam-simulate, is AGPL-3.0: hopper-cli neither
 * bundles nor installs it (an optional peer dependency). It is loaded from beside hopper: a global
 * install beside a global hopper, the same project's node_modules, `npx -p`, a clone's
 * devDependencies.
 */
import { readFile } from 'node:fs/promises';
import { messageOf } from '../../lambdas/core/errors/index.js';
import { CommandError, defineCommand, EXIT, json, table } from '../cli/command.js';
import { HOPPER_TEMPLATE } from '../files.js';
import { checkPermissions, RECORDED_CALLS, type PermissionsReport, type Simulate } from './check.js';
import type { Template } from './template.js';

const SIMULATOR = '@cloud-copilot/iam-simulate';

/** The simulator's runSimulation, where it is installed beside hopper (or in the same project). */
async function simulator(): Promise<Simulate> {
  const loaded = await import('@cloud-copilot/iam-simulate').catch(() => undefined);
  if (loaded !== undefined) return loaded.runSimulation;
  throw new CommandError(
    'simulator_missing',
    `the check runs the IAM policy simulator ${SIMULATOR} (AGPL-3.0), which hopper-cli does not install: ` +
      `install it beside hopper (npm install -g ${SIMULATOR} for a global hopper; npm install --save-dev ` +
      `${SIMULATOR} in the project hopper-cli is installed in), or run npx -p hopper-cli -p ${SIMULATOR} hopper permissions`,
  );
}

async function templateAt(file: string | URL): Promise<Template> {
  const template = await readFile(file, 'utf8')
    .then((text) => JSON.parse(text) as Partial<Template>)
    .catch((error: unknown) => ({ error: messageOf(error) }));
  if ('Resources' in template && typeof template.Resources === 'object') return template as Template;
  throw new CommandError(
    'template_unreadable',
    `${String(file)} is not a synthesized CloudFormation template (${'error' in template ? template.error : 'it has no Resources'}): give the one cdk synth writes, cdk.out/<stack>.template.json`,
  );
}

function formatReport(report: PermissionsReport): string {
  const rows = report.decisions.map((d) => [
    d.function,
    d.action,
    d.resource,
    d.allowed ? 'allowed' : 'DENIED',
    d.statement,
  ]);
  // One row per function, action and resource (HeadObject and GetObject are both s3:GetObject).
  const unique = [...new Map(rows.map((row) => [row.join(' '), row])).values()];
  const denied = report.decisions.filter((d) => !d.allowed);
  return [
    table(['FUNCTION', 'ACTION', 'RESOURCE', 'DECISION', 'ALLOWED BY'], unique),
    ...denied.map(
      (d) => `denied: ${d.function} ${d.operation} (${d.action} on ${d.resource}): ${d.statement}\n`,
    ),
    ...report.unused.map((grant) => `granted, used by no recorded call: ${grant}\n`),
    // The rows are fewer than the requests: calls of one function, action and resource share a row.
    `${String(unique.length)} rows: each function's action on each resource; ${String(report.decisions.length)} requests: every AWS call the functions make (local runs recorded them), some sharing a row. ${String(report.decisions.length - denied.length)} of ${String(report.decisions.length)} requests allowed; ${String(report.unused.length)} unused grants\n`,
  ].join('');
}

export const runPermissionsCommand = defineCommand(
  {
    name: 'permissions',
    usage: '[--template FILE] [--json]',
    about:
      "Proves each Hopper function's role allows every AWS call the function makes (recorded from local runs of every path) and grants nothing more but CDK's own grants: an IAM policy simulator decides each call against the template, with the bucket's, keys' and secret's policies.",
    flags: {
      template: {
        value: 'FILE',
        help: "a synthesized template (cdk.out/<stack>.template.json; default: Hopper's own stack)",
      },
      json: { help: 'the decisions and unused grants as JSON' },
    },
    positionals: {
      min: 0,
      max: 0,
      what: 'arguments',
      hint: 'hopper permissions --template cdk.out/MyApp.template.json',
    },
    exits: {
      0: 'every call is allowed and every grant used (or exempt)',
      1: 'a call is denied or a grant unused (the table names it), or the simulator is not installed',
      2: true,
    },
  },
  async (args, io) => {
    const report = await checkPermissions(
      await templateAt(args.text('template') ?? HOPPER_TEMPLATE),
      RECORDED_CALLS,
      await simulator(),
    );
    io.stdout.write(args.on('json') ? json(report) : formatReport(report));
    return report.unused.length === 0 && report.decisions.every((d) => d.allowed)
      ? EXIT.succeeded
      : EXIT.failed;
  },
);
