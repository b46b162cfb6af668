/**
 * `npm run permissions [-- --template FILE]`: proves that the role a template gives each Hopper
 * function allows every AWS call that function makes (recorded from local runs of every path,
 * kept in recorded-calls.json, re-recorded by test/permissions/recording.test.ts), and that it
 * grants nothing those calls do not use but CDK's own grants (EXEMPT, with why).
 *
 *   template.ts  the template: functions by Description, their roles, resource policies, references
 *   actions.ts   each recorded call as IAM requests (action, resource ARN, condition keys)
 *   check.ts     the simulator's decision for each, and the grants no call uses
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { AwsCall } from './aws-calls.js';
import { CommandError, defineCommand, EXIT, json, processIo, table } from '../../local/cli/command.js';
import { checkPermissions, type PermissionsReport } from './check.js';
import type { Template } from './template.js';

export { checkPermissions, EXEMPT, type CallDecision, type PermissionsReport } from './check.js';
export { CALL_ACTIONS, iamRequests } from './actions.js';
export { templateFunctions, type Template } from './template.js';

export const RECORDED_CALLS_FILE = fileURLToPath(new URL('./recorded-calls.json', import.meta.url));

export async function recordedCalls(): Promise<AwsCall[]> {
  return JSON.parse(await readFile(RECORDED_CALLS_FILE, 'utf8')) as AwsCall[];
}

/** The simulator, which Hopper does not install (AGPL-3.0): loaded only here. */
async function simulator(): Promise<Parameters<typeof checkPermissions>[2]> {
  try {
    return (await import('@cloud-copilot/iam-simulate')).runSimulation;
  } catch {
    throw new CommandError(
      'simulator_missing',
      'the check runs the IAM policy simulator @cloud-copilot/iam-simulate (AGPL-3.0), which Hopper does not install: ' +
        'npm install --no-save @cloud-copilot/iam-simulate, then run it again',
    );
  }
}

/** Hopper's own stack, synthesized without bundling (the template only). */
async function synthesized(): Promise<Template> {
  const [{ createHopperApp }, { Template }] = await Promise.all([
    import('../../infra/hopper-app.js'),
    import('aws-cdk-lib/assertions'),
  ]);
  const hopper = createHopperApp({
    cloudFormationValidation: false,
    context: { 'aws:cdk:bundling-stacks': [] },
  });
  return Template.fromStack(hopper.stack).toJSON() as Template;
}

export function formatReport(report: PermissionsReport): string {
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
    `${String(report.decisions.length - denied.length)} of ${String(report.decisions.length)} requests allowed; ${String(report.unused.length)} unused grants\n`,
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
      hint: 'npm run permissions -- --template cdk.out/MyApp.template.json',
    },
    exits: {
      0: 'every call is allowed and every grant used (or exempt)',
      1: 'a call is denied or a grant unused: the table names it',
      2: true,
    },
  },
  async (args, io) => {
    const file = args.text('template');
    const template =
      file === undefined ? await synthesized() : (JSON.parse(await readFile(file, 'utf8')) as Template);
    const report = await checkPermissions(template, await recordedCalls(), await simulator());
    io.stdout.write(args.on('json') ? json(report) : formatReport(report));
    return report.unused.length === 0 && report.decisions.every((d) => d.allowed)
      ? EXIT.succeeded
      : EXIT.failed;
  },
);

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.exitCode = await runPermissionsCommand(process.argv.slice(2), processIo());
}
