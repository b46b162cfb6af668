#!/usr/bin/env node
/**
 * `npm test`: the static checks (typecheck, lint, code size, layers) and the whole Vitest suite,
 * started together. The suite leaves part of the machine idle (its files wait on loopback servers
 * and Wait states), and the checks fill it: on the 2-core machine the whole takes about the
 * suite's time alone rather than a minute more (docs/performance.md). Each check's output is
 * printed whole when it ends, the suite's as it runs; arguments go to Vitest
 * (`npm test -- test/local/`). Exits 1 if any failed, naming which.
 */
import { spawn } from 'node:child_process';

const CHECKS = ['typecheck', 'lint', 'code-size', 'deps'];
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** Runs `command`, its output kept (or passed through); resolves with its exit code and output. */
function run(command, args, { inherit = false } = {}) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(command, args, { stdio: inherit ? 'inherit' : ['ignore', 'pipe', 'pipe'] });
    const output = [];
    child.stdout?.on('data', (chunk) => output.push(chunk));
    child.stderr?.on('data', (chunk) => output.push(chunk));
    const done = (code) =>
      resolve({ code, output: Buffer.concat(output).toString(), ms: Date.now() - started });
    child.on('error', (error) => done(`${error.message}`));
    child.on('close', (code, signal) => done(code ?? signal));
  });
}

const checks = CHECKS.map(async (name) => {
  const result = await run(npm, ['run', '--silent', name]);
  const seconds = (result.ms / 1000).toFixed(1);
  const ok = result.code === 0;
  process.stdout.write(
    `\n── npm run ${name}: ${ok ? 'passed' : `FAILED (${result.code})`} in ${seconds} s\n`,
  );
  if (!ok || result.output.trim() !== '') process.stdout.write(result.output.trimEnd() + '\n');
  return { name, ok };
});
const suite = run('npx', ['vitest', 'run', ...process.argv.slice(2)], { inherit: true });

const [results, tests] = await Promise.all([Promise.all(checks), suite]);
const failed = results.filter((check) => !check.ok).map((check) => check.name);
if (tests.code !== 0) failed.push('vitest');
process.stdout.write(
  failed.length === 0
    ? `\nnpm test: ${CHECKS.join(', ')} and the suite passed\n`
    : `\nnpm test: FAILED: ${failed.join(', ')}\n`,
);
process.exitCode = failed.length === 0 ? 0 : 1;
