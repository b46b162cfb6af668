/**
 * The `hopper` command as a user runs it: bin/hopper.mjs spawned with Node (through tsx), and
 * its dispatch.
 */
import { describe, expect, it } from 'vitest';
import { hopper, startHopper } from './helpers/hopper-cli.js';

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
});
