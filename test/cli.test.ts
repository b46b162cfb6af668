/**
 * The `hopper` command as a user runs it: dist/hopper.mjs (the compiled command, built by npm run build) spawned with Node, and
 * its dispatch; what every command does the same way (unknown flags, --help, exit codes, errors
 * with --json), checked in-process on each.
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { COMMANDS, main } from '../local/cli/index.js';
import { runStatusCommand } from '../local/cli/status.js';
import { runCommandCaptured } from './helpers/commands.js';
import { hopper, startHopper } from './helpers/hopper-cli.js';

const NAMES = Object.keys(COMMANDS);

describe('hopper', () => {
  it('lists its commands on --help and exits 0', async () => {
    const result = await hopper(['--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/run <folder>.*\n.*local.*\n.*service/);
  });

  it('names what hopper run is missing, exit 2', async () => {
    const result = await hopper(['run']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('hopper run: give the folder to drop, e.g. hopper run examples/reviews');
  });

  it('names an unknown command and shows the usage, exit 2', async () => {
    const result = await hopper(['frobnicate']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('unknown command "frobnicate"');
    expect(result.stderr).toContain('Usage: hopper');
  });

  it('names a bad service flag, exit 2', async () => {
    const result = await hopper(['service', '--credits', 'many']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--credits: expected an integer >= 0, got "many"');
  });

  it('serves the simulated service, prints its URLs and key, and stops cleanly on SIGINT', async () => {
    const service = startHopper(['service', '--api-key', 'k-123', '--credits', '2']);
    try {
      await service.waitFor('API key:', 10_000);
      const stdout = service.stdout();
      const apiUrl = /API URL: +(http:\/\/127\.0\.0\.1:\d+)/.exec(stdout)?.[1];
      expect(stdout).toMatch(/File URL: +http:\/\/127\.0\.0\.1:\d+/);
      expect(stdout).toContain('API key:  k-123');
      const res = await fetch(`${apiUrl!}/v1/encoders`, { headers: { authorization: 'Bearer k-123' } });
      expect(res.status).toBe(200);
    } catch (error) {
      await service.stop();
      throw error;
    }
    expect((await service.stop()).code).toBe(0);
  });

  it('prints its version from package.json', async () => {
    const { version } = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    expect(await hopper(['--version'])).toEqual({ code: 0, stdout: `hopper ${version}\n`, stderr: '' });
  });
});

describe('every command', () => {
  it('has every command', () => {
    expect(NAMES.sort()).toEqual([
      'check',
      'doctor',
      'local',
      'models',
      'permissions',
      'retry',
      'run',
      'runs',
      'service',
      'status',
      'wait',
    ]);
  });

  it.each(NAMES)('%s names an unknown flag and points at its --help, exit 2', async (name) => {
    const result = await runCommandCaptured(main, [name, '--bogus'], {});
    expect(result).toEqual({
      code: 2,
      stdout: '',
      stderr: `hopper ${name}: unknown option --bogus (see hopper ${name} --help)\n`,
    });
  });

  it.each(NAMES)('%s answers --help and -h alike, listing its exit codes', async (name) => {
    const help = await runCommandCaptured(main, [name, '--help'], {});
    expect(help).toMatchObject({ code: 0, stderr: '' });
    expect(help.stdout).toMatch(new RegExp(`^Usage: hopper ${name} `));
    expect(help.stdout).toMatch(/\nOptions:\n(.*\n)* {2}-h, --help +show this help\n/);
    expect(help.stdout).toMatch(/\nExit codes:\n {2}0 +\S.*\n(.*\n)* {2}2 +\S/);
    expect(await runCommandCaptured(main, [name, '-h'], {})).toEqual(help);
  });

  it('hopper --help lists hopper doctor, and hopper doctor --help its checks and exit codes', async () => {
    const usage = await runCommandCaptured(main, ['--help'], {});
    expect(usage.stdout).toMatch(/^ {2}doctor +check a Hopper end to end without spending a credit/m);
    const { stdout } = await runCommandCaptured(main, ['doctor', '--help'], {});
    expect(stdout).toMatch(/^Usage: hopper doctor \[--stack NAME \[--hopper ID\]\]/);
    const codes = [...stdout.slice(stdout.indexOf('Exit codes:')).matchAll(/^ {2}(\d+) /gm)].map((m) => m[1]);
    expect(codes).toEqual(['0', '1', '2', '130']);
    expect(stdout).toMatch(/^ {2}0 +every check holds/m);
  });

  it('hopper run --help lists every exit code it ends with, 4 and 130 too', async () => {
    const { stdout } = await runCommandCaptured(main, ['run', '--help'], {});
    const codes = [...stdout.slice(stdout.indexOf('Exit codes:')).matchAll(/^ {2}(\d+) /gm)].map((m) => m[1]);
    expect(codes).toEqual(['0', '1', '2', '3', '4', '130']);
  });

  it('hopper wait --help lists its exit codes: 5 for a run that timed out, 124 for --timeout passing', async () => {
    const { stdout } = await runCommandCaptured(main, ['wait', '--help'], {});
    const codes = [...stdout.slice(stdout.indexOf('Exit codes:')).matchAll(/^ {2}(\d+) /gm)].map((m) => m[1]);
    expect(codes).toEqual(['0', '1', '2', '5', '124', '130']);
    expect(stdout).toMatch(/^ {2}5 +the run timed out: Step Functions stopped it/m);
  });

  it('with --json, an error is one JSON object on stdout, with the same exit code', async () => {
    const usage = await runCommandCaptured(main, ['runs', 'reviews', '--json', '--limit', '0'], {});
    expect(usage).toMatchObject({ code: 2, stderr: '' });
    expect(JSON.parse(usage.stdout)).toEqual({
      error: { code: 'usage', message: '--limit: expected an integer 1..1000, got "0"' },
    });
    const failed = await runCommandCaptured(runStatusCommand, ['--json'], {});
    expect(failed).toMatchObject({ code: 1, stderr: '' });
    expect(JSON.parse(failed.stdout)).toEqual({
      error: { code: 'no_target', message: expect.stringContaining('no Hopper to talk to') as string },
    });
    const plain = await runCommandCaptured(runStatusCommand, [], {});
    expect(plain).toMatchObject({ code: 1, stdout: '' });
    expect(plain.stderr).toMatch(/^hopper status: no Hopper to talk to/);
  });
});
