/**
 * A crash point tried with a real kill -9: `hopper local --data-dir D` (the built dist/hopper.mjs,
 * as a user runs it) against a simulated service of this process, through a proxy that lets the
 * chosen request reach the service, waits for its answer, then kills the process (SIGKILL)
 * before the answer gets back, as the reproduction did. Started again on D, the printed
 * line and the status are checked against the service, the advice is followed with the real
 * `hopper retry`, and the invariants are checked as for the in-process trials. Slower (two
 * process starts), so only a sample of points runs this way.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readStatus } from '../../../lambdas/records/status/index.js';
import { localS3Client } from '../../../local/s3/local-s3.js';
import { startSimulatedService, type SimulatedService } from '../../../local/service/index.js';
import { BRISK_SERVICE } from '../../../testkit/brisk-service.js';
import { endpointOf } from '../../helpers/handler-kills.js';
import { hopper, startHopper, type RunningHopper } from '../../helpers/hopper-cli.js';
import { putDrop } from '../../helpers/pipeline.js';
import { followAdvice, type AdviceDriver } from './advice.js';
import { endInvariants, restartInvariants, worldOf, type Bucket } from './invariants.js';
import type { Drop, TrialResult } from './trials.js';

const CREDITS = 10;
const RUN_BOUND_MS = 60_000;

/** A service API request of the drop's first run: `POST /v1/datasets`, its first. */
export interface ProcessKillPoint {
  readonly request: string;
  readonly ordinal: number;
}

export async function processKillTrial(drop: Drop, point: ProcessKillPoint): Promise<TrialResult> {
  const started = performance.now();
  const trial = { kind: 'kill' as const, point: `(kill -9) ${point.request}#${String(point.ordinal)}` };
  const work = await mkdtemp(join(tmpdir(), 'hopper-crash-9-'));
  const service = await startSimulatedService({ ...BRISK_SERVICE, credits: CREDITS });
  const children: RunningHopper[] = [];
  const proxy = await killingProxy(service, point, () => children[0]);
  try {
    const start = async (): Promise<{ child: RunningHopper; env: NodeJS.ProcessEnv; s3: Bucket }> => {
      const child = startHopper(
        [
          'local',
          '--data-dir',
          join(work, 'data'),
          '--service-url',
          proxy.url,
          '--no-console',
          '--wait-ms',
          '20',
        ],
        { HOPPER_API_KEY: service.apiKey },
      );
      children.push(child);
      await child.waitFor('export HOPPER_BUCKET=', RUN_BOUND_MS);
      const env = exportsOf(child.stdout());
      return {
        child,
        env,
        s3: { client: localS3Client(env.AWS_ENDPOINT_URL ?? ''), bucket: env.HOPPER_BUCKET ?? '' },
      };
    };
    const first = await start();
    await putDrop(first.s3.client, first.s3.bucket, drop.name, drop.files);
    let killed = false;
    const reached = await Promise.race([
      proxy.killed.then(() => (killed = true)),
      endOf(first.s3, drop.name, undefined, () => killed).then(() => false),
    ]);
    await first.child.stop('SIGKILL');
    if (!reached) return { trial, reached, violations: [], seconds: seconds(started) };
    const second = await start();
    const violations = await afterRestart(second, service, drop);
    return { trial, reached, violations, seconds: seconds(started) };
  } finally {
    await Promise.all(children.map((child) => child.stop('SIGKILL')));
    await proxy.close();
    await service.close();
    await rm(work, { recursive: true, force: true });
  }
}

/** The restart's line and status against the service, the advice followed, the invariants. */
async function afterRestart(
  second: { child: RunningHopper; env: NodeJS.ProcessEnv; s3: Bucket },
  service: SimulatedService,
  drop: Drop,
): Promise<string[]> {
  const atRestart = await worldOf(service, second.s3, drop.name, CREDITS);
  // The kill came at a request of the run: it had started.
  const violations = restartInvariants(atRestart, drop.name, true);
  if (
    atRestart.status?.state === 'interrupted' &&
    !second.child
      .stdout()
      .includes(`# Run of ${drop.name} interrupted by the last stop: hopper retry ${drop.name}`)
  ) {
    violations.push(
      'advice: the restart printed no "interrupted by the last stop" line for the interrupted run',
    );
  }
  const driver: AdviceDriver = {
    async retry() {
      const retry = await hopper(['retry', drop.name], second.env);
      return { code: retry.code ?? -1, output: retry.stderr || retry.stdout };
    },
    upload: (files) => putDrop(second.s3.client, second.s3.bucket, drop.name, files),
    async runStartedBy(act) {
      const before = (await readStatus(second.s3.client, second.s3.bucket, drop.name))?.run_id;
      await act();
      return endOf(second.s3, drop.name, before).then(
        () => undefined,
        (error: unknown) => (error instanceof Error ? error.message : String(error)),
      );
    },
    status: () => readStatus(second.s3.client, second.s3.bucket, drop.name),
  };
  violations.push(...(await followAdvice(driver, drop, atRestart.status)));
  const world = await worldOf(service, second.s3, drop.name, CREDITS);
  violations.push(
    ...(await endInvariants(world, second.s3, drop.name, { allowed: 1, why: 'one train.json' })),
  );
  return violations;
}

/**
 * Resolves once the drop's status is of a run other than `before` and no longer running, or
 * `given` up (bounded).
 */
async function endOf(
  s3: Bucket,
  drop: string,
  before: string | undefined,
  givenUp: () => boolean = () => false,
): Promise<void> {
  const deadline = Date.now() + RUN_BOUND_MS;
  for (;;) {
    if (givenUp()) return;
    const status = await readStatus(s3.client, s3.bucket, drop).catch(() => null);
    if (status !== null && status.run_id !== before && status.state !== 'running') return;
    if (Date.now() > deadline) {
      throw new Error(
        status === null || status.run_id === before
          ? `no run within ${String(RUN_BOUND_MS / 1000)} s`
          : `did not end within ${String(RUN_BOUND_MS / 1000)} s (running at ${status.hopper_step})`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * A proxy to the service's API: passes every request through, but the point's: that one reaches
 * the service, and once its whole answer is back the process is killed and the answer dropped.
 */
async function killingProxy(
  service: SimulatedService,
  point: ProcessKillPoint,
  victim: () => RunningHopper | undefined,
): Promise<{ url: string; killed: Promise<void>; close(): Promise<void> }> {
  const target = new URL(service.apiUrl);
  let seen = 0;
  let kill: () => void = () => undefined;
  const killed = new Promise<void>((resolve) => (kill = resolve));
  let done = false;
  const server: Server = createServer((incoming, outgoing) => {
    const request = `${incoming.method ?? ''} ${endpointOf(incoming.url ?? '')}`;
    const aimed = !done && request === point.request && ++seen === point.ordinal;
    const upstream = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        method: incoming.method,
        path: incoming.url,
        headers: incoming.headers,
      },
      (answer: IncomingMessage) => {
        if (!aimed) {
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(outgoing);
          return;
        }
        answer.resume();
        answer.on('end', () => {
          done = true;
          void victim()
            ?.stop('SIGKILL')
            .then(() => {
              outgoing.destroy();
              kill();
            });
        });
      },
    );
    upstream.on('error', () => outgoing.destroy());
    incoming.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${String(port)}`,
    killed,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
}

function exportsOf(stdout: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [, name, value] of stdout.matchAll(/^export ([A-Z_]+)=(\S+)$/gm)) {
    if (name !== undefined) env[name] = value;
  }
  return env;
}

function seconds(started: number): number {
  return (performance.now() - started) / 1000;
}
