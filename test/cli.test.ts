/**
 * The `hopper` command as a user runs it: bin/hopper.mjs spawned with Node (through tsx), and
 * its dispatch.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const BIN = fileURLToPath(new URL('../bin/hopper.mjs', import.meta.url));

interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `hopper ...args` to its end. */
async function hopper(args: string[]): Promise<Finished> {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout, stderr };
}

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
    const child = spawn(process.execPath, [BIN, 'service', '--api-key', 'k-123', '--credits', '2'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const exited = once(child, 'exit') as Promise<[number | null]>;
    try {
      // Up to 10 s for the three lines.
      for (let waited = 0; waited < 200 && !stdout.includes('API key:'); waited++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const apiUrl = /API URL: +(http:\/\/127\.0\.0\.1:\d+)/.exec(stdout)?.[1];
      expect(stdout).toMatch(/File URL: +http:\/\/127\.0\.0\.1:\d+/);
      expect(stdout).toContain('API key:  k-123');
      const res = await fetch(`${apiUrl!}/v1/encoders`, { headers: { authorization: 'Bearer k-123' } });
      expect(res.status).toBe(200);
    } finally {
      child.kill('SIGINT');
    }
    const [code] = await exited;
    expect(code).toBe(0);
  });
});
