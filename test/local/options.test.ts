import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import {
  CliUsageError,
  defineCommand,
  parseCommand,
  stopSignal,
  untilStopped,
  type CommandSpec,
} from '../../local/cli/command.js';
import {
  LOCAL_SPEC,
  localModeOptions,
  RUN_SPEC,
  runOptions,
  type LocalCommandOptions,
} from '../../local/cli/options.js';
import { API_KEY_ENV } from '../../local/cli/target.js';
import { thrownBy } from '../helpers/run-errors.js';

type ParsedRun = { kind: 'help' } | ({ kind: 'run' } & ReturnType<typeof runOptions>);
type ParsedLocal = { kind: 'help' } | { kind: 'local'; options: LocalCommandOptions };

/** `hopper run <argv>` read as the command reads it. */
function parseRunArgs(argv: readonly string[], env: NodeJS.ProcessEnv): ParsedRun {
  const args = parseCommand(RUN_SPEC, argv);
  return args === 'help' ? { kind: 'help' } : { kind: 'run', ...runOptions(args, env) };
}

/** `hopper local <argv>` read as the command reads it. */
function parseLocalArgs(argv: readonly string[], env: NodeJS.ProcessEnv): ParsedLocal {
  const args = parseCommand(LOCAL_SPEC, argv);
  return args === 'help' ? { kind: 'help' } : { kind: 'local', options: localModeOptions(args, env, true) };
}

/** No HOPPER_API_KEY: the tests never read the environment they run in. */
const NO_ENV: NodeJS.ProcessEnv = {};

function run(argv: readonly string[], env = NO_ENV): Extract<ParsedRun, { kind: 'run' }> {
  const parsed = parseRunArgs(argv, env);
  if (parsed.kind !== 'run') throw new Error(`expected a run, got ${parsed.kind}`);
  return parsed;
}

function local(argv: readonly string[], env = NO_ENV): LocalCommandOptions {
  const parsed: ParsedLocal = parseLocalArgs(argv, env);
  if (parsed.kind !== 'local') throw new Error(`expected local, got ${parsed.kind}`);
  return parsed.options;
}

/** The usage error `parse` throws; fails the test when it throws nothing or something else. */
function usageError(parse: () => unknown): CliUsageError {
  return thrownBy(CliUsageError, parse);
}

describe('parseRunArgs', () => {
  it('takes one folder, with models going to out/ by default and the simulated service', () => {
    const parsed = run(['examples/reviews']);
    expect(parsed).toEqual({
      kind: 'run',
      folder: 'examples/reviews',
      out: 'out',
      options: { mode: { logLevel: 'SILENT' }, console: { enabled: false } },
    });
  });

  it('requires the folder and says how to give it', () => {
    expect(usageError(() => parseRunArgs([], NO_ENV)).message).toBe(
      'give the folder to drop, e.g. hopper run examples/reviews',
    );
    // Options alone are not a folder.
    expect(usageError(() => parseRunArgs(['--out', 'models'], NO_ENV)).message).toMatch(/give the folder/);
  });

  it('refuses more than one folder and names them', () => {
    const error = usageError(() => parseRunArgs(['a', 'b', 'c'], NO_ENV));
    expect(error.message).toBe('give one folder to drop, got 3: a b c');
  });

  it('takes --out and refuses an empty one', () => {
    expect(run(['drop', '--out', 'models']).out).toBe('models');
    expect(run(['--out=elsewhere/x', 'drop']).out).toBe('elsewhere/x');
    expect(usageError(() => parseRunArgs(['drop', '--out', ''], NO_ENV)).message).toMatch(/^--out: /);
  });

  it('names an unknown flag and a flag missing its value, pointing at --help', () => {
    expect(usageError(() => parseRunArgs(['drop', '--bogus'], NO_ENV)).message).toBe(
      'unknown option --bogus (see hopper run --help)',
    );
    expect(usageError(() => parseRunArgs(['drop', '-z'], NO_ENV)).message).toBe(
      'unknown option -z (see hopper run --help)',
    );
    expect(usageError(() => parseRunArgs(['drop', '--out'], NO_ENV)).message).toBe(
      '--out needs a value: --out DIR (see hopper run --help)',
    );
    expect(usageError(() => parseRunArgs(['drop', '--verbose=yes'], NO_ENV)).message).toBe(
      '--verbose takes no value (see hopper run --help)',
    );
  });

  it('answers help before checking anything else', () => {
    expect(parseRunArgs(['--help'], NO_ENV)).toEqual({ kind: 'help' });
    expect(parseRunArgs(['-h', 'a', 'b'], NO_ENV)).toEqual({ kind: 'help' });
    expect(parseRunArgs(['drop', '--api-key', 'k', '--help'], NO_ENV)).toEqual({ kind: 'help' });
  });
});

describe('parseLocalArgs', () => {
  it('takes no folder and says how drops get in instead', () => {
    expect(local([])).toEqual({ mode: { logLevel: 'SILENT' }, console: { enabled: true } });
    const error = usageError(() => parseLocalArgs(['examples/reviews'], NO_ENV));
    expect(error.message).toContain('examples/reviews');
    expect(error.message).toContain('S3 client');
  });

  it('does not know --out (only hopper run copies models out)', () => {
    expect(usageError(() => parseLocalArgs(['--out', 'x'], NO_ENV)).message).toBe(
      'unknown option --out (see hopper local --help)',
    );
  });

  it('answers help', () => {
    expect(parseLocalArgs(['-h'], NO_ENV)).toEqual({ kind: 'help' });
    expect(parseLocalArgs(['--help', 'stray'], NO_ENV)).toEqual({ kind: 'help' });
  });
});

// The same options for both commands: each case is checked through both parsers.
const PARSERS = [
  { command: 'run', options: (argv: readonly string[], env = NO_ENV) => run(['drop', ...argv], env).options },
  { command: 'local', options: local },
] as const;

describe.each(PARSERS)('the options common to both commands ($command)', ({ command, options }) => {
  const parseAny = (argv: readonly string[], env = NO_ENV): unknown =>
    command === 'run' ? parseRunArgs(['drop', ...argv], env) : parseLocalArgs(argv, env);

  describe('--service-url and its API key', () => {
    it('takes the key from --api-key', () => {
      const parsed = options(['--service-url', 'https://api.example.com', '--api-key', 'sk-1']);
      expect(parsed.mode.service).toEqual({ url: 'https://api.example.com', apiKey: 'sk-1' });
    });

    it(`takes the key from ${API_KEY_ENV} given as the environment`, () => {
      const parsed = options(['--service-url', 'http://127.0.0.1:8080'], { [API_KEY_ENV]: ' sk-env ' });
      expect(parsed.mode.service).toEqual({ url: 'http://127.0.0.1:8080', apiKey: 'sk-env' });
    });

    it(`prefers --api-key to ${API_KEY_ENV}`, () => {
      const parsed = options(['--service-url', 'http://h', '--api-key', 'flag'], { [API_KEY_ENV]: 'env' });
      expect(parsed.mode.service?.apiKey).toBe('flag');
    });

    it(`refuses --service-url without a key, naming both ways to give one`, () => {
      for (const env of [NO_ENV, { [API_KEY_ENV]: '' }, { [API_KEY_ENV]: '   ' }]) {
        const error = usageError(() => parseAny(['--service-url', 'https://api.example.com'], env));
        expect(error.message).toContain('--api-key');
        expect(error.message).toContain(API_KEY_ENV);
      }
    });

    it.each(['ftp://api.example.com', 'api.example.com', 'localhost:8080', 'http://', 'http://a b'])(
      'refuses %j as the service URL and quotes it',
      (url) => {
        const error = usageError(() => parseAny(['--service-url', url, '--api-key', 'k']));
        expect(error.message).toBe(`--service-url: expected an http(s) URL, got "${url}"`);
      },
    );

    it.each(['', '   '])(
      'refuses --api-key %j, with or without --service-url, naming both ways to give a key',
      (key) => {
        for (const argv of [
          ['--service-url', 'https://api.example.com', '--api-key', key],
          [`--api-key=${key}`, '--service-url', 'https://api.example.com'],
          ['--api-key', key],
        ]) {
          // A good key in the environment does not make a blank flag acceptable.
          const error = usageError(() => parseAny(argv, { [API_KEY_ENV]: 'sk-env' }));
          expect(error.message).toMatch(/^--api-key: /);
          expect(error.message).toContain('empty');
          expect(error.message).toContain(API_KEY_ENV);
        }
      },
    );

    it('refuses --api-key without --service-url (the simulated service has its own key)', () => {
      const error = usageError(() => parseAny(['--api-key', 'sk-1']));
      expect(error.message).toMatch(/^--api-key is for --service-url/);
    });

    it(`ignores ${API_KEY_ENV} without --service-url`, () => {
      expect(options([], { [API_KEY_ENV]: 'sk-env' }).mode.service).toBeUndefined();
    });
  });

  describe('--s3-port and --wait-ms', () => {
    it('take integers in range', () => {
      expect(options(['--s3-port', '1']).mode.s3Port).toBe(1);
      expect(options(['--s3-port', '65535', '--wait-ms', '0']).mode).toMatchObject({
        s3Port: 65535,
        waitMs: 0,
      });
      expect(options(['--wait-ms=3600000']).mode.waitMs).toBe(3_600_000);
    });

    it('--wait-ms also shortens the quiet period a drop waits for; without it, the default stands', () => {
      expect(options(['--wait-ms', '20']).mode).toMatchObject({ waitMs: 20, dropQuietMs: 20 });
      expect(options([]).mode.dropQuietMs).toBeUndefined();
    });

    it('leave the defaults to local mode when absent', () => {
      const { mode } = options([]);
      expect('s3Port' in mode).toBe(false);
      expect('waitMs' in mode).toBe(false);
    });

    it.each([
      ['--s3-port', '0', '1..65535'],
      ['--s3-port', '65536', '1..65535'],
      ['--s3-port', 'eighty', '1..65535'],
      ['--s3-port', '80.5', '1..65535'],
      ['--s3-port', '', '1..65535'],
      ['--wait-ms', '-1', '0..3600000'],
      ['--wait-ms', '3600001', '0..3600000'],
      ['--wait-ms', '1e3', '0..3600000'],
      ['--wait-ms', 'soon', '0..3600000'],
      ['--wait-ms', '9999999999', '0..3600000'],
    ])('refuses %s %j, naming the flag, the range and the value', (flag, value, range) => {
      const error = usageError(() => parseAny([`${flag}=${value}`]));
      expect(error.message).toBe(`${flag}: expected an integer ${range}, got "${value}"`);
    });
  });

  describe('--credit-budget', () => {
    it('sets the credits trainings may take in any 24 hours; there is no budget without it', () => {
      expect(options(['--credit-budget', '20']).mode.creditBudget).toEqual({ perDay: 20 });
      expect('creditBudget' in options([]).mode).toBe(false);
      expect(usageError(() => parseAny(['--credit-budget=0'])).message).toBe(
        '--credit-budget: expected an integer 1..1000000, got "0"',
      );
    });
  });

  describe('--verbose', () => {
    it("sets the handlers' log level to INFO; it is SILENT without", () => {
      expect(options(['--verbose'])).toMatchObject({ mode: { logLevel: 'INFO' } });
      expect(options([])).toMatchObject({ mode: { logLevel: 'SILENT' } });
    });
  });
});

describe('the console and the data directory', () => {
  it('hopper local serves the console by default, on a chosen port with --console-port, not at all with --no-console', () => {
    expect(local([]).console).toEqual({ enabled: true });
    expect(local(['--console-port', '8080']).console).toEqual({ enabled: true, port: 8080 });
    expect(local(['--no-console']).console).toEqual({ enabled: false });
    expect(
      usageError(() => parseLocalArgs(['--no-console', '--console-port', '8080'], NO_ENV)).message,
    ).toContain('contradict');
    expect(usageError(() => parseLocalArgs(['--console-port', '0'], NO_ENV)).message).toBe(
      '--console-port: expected an integer 1..65535, got "0"',
    );
  });

  it('hopper run serves it only with --console (or --console-port)', () => {
    expect(run(['f']).options.console).toEqual({ enabled: false });
    expect(run(['f', '--console']).options.console).toEqual({ enabled: true });
    expect(run(['f', '--console-port', '9000']).options.console).toEqual({ enabled: true, port: 9000 });
    expect(usageError(() => parseRunArgs(['f', '--no-console'], NO_ENV)).message).toContain(
      'unknown option --no-console',
    );
  });

  it('--data-dir goes to local mode; empty is refused; hopper run does not take it', () => {
    expect(local(['--data-dir', 'state']).mode).toMatchObject({ dataDir: 'state' });
    expect('dataDir' in local([]).mode).toBe(false);
    expect(usageError(() => parseLocalArgs(['--data-dir='], NO_ENV)).message).toContain('--data-dir');
    expect(usageError(() => parseRunArgs(['f', '--data-dir', 'x'], NO_ENV)).message).toContain(
      'unknown option --data-dir',
    );
  });
});

describe('a command’s stop signal', () => {
  const spec: CommandSpec = {
    name: 'probe',
    usage: '',
    about: 'a command that only looks at its stop signal',
    flags: {},
    positionals: { min: 0, max: 0, what: 'nothing', hint: '' },
    exits: { 0: true },
  };
  const sink = () =>
    new Writable({
      write: (_chunk, _encoding, done) => {
        done();
      },
    });

  it('is SIGINT or SIGTERM while the command runs, and leaves no listener on the process after it', async () => {
    const before = [process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')];
    let during: number[] = [];
    let aborted: boolean | undefined;
    const probe = defineCommand(spec, (_args, io) => {
      during = [process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')];
      aborted = stopSignal(io).aborted;
      return Promise.resolve(0);
    });
    for (let run = 0; run < 12; run++) expect(await probe([], { stdout: sink(), stderr: sink() })).toBe(0);
    expect(during).toEqual(before.map((count) => count + 1));
    expect(aborted).toBe(false);
    // Before, each run left its two listeners: twelve runs passed Node's limit of ten (a warning).
    expect([process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')]).toEqual(before);
  });

  it('holds one listener of each signal for all the commands running at once, and stops them all', async () => {
    const before = [process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')];
    const othersListening = process.listeners('SIGINT');
    const counts: number[][] = [];
    let started = 0;
    let allStarted: () => void = () => undefined;
    const running = new Promise<void>((resolve) => (allStarted = resolve));
    const waiter = defineCommand(spec, async (_args, io) => {
      const signal = stopSignal(io);
      if (++started === 12) allStarted();
      await untilStopped(signal);
      counts.push([process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')]);
      return 130;
    });
    const runs = Array.from({ length: 12 }, () => waiter([], { stdout: sink(), stderr: sink() }));
    await running;
    // Before, each command running added its own two: twelve at once passed Node's limit of ten.
    expect([process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')]).toEqual(
      before.map((count) => count + 1),
    );
    // Only the commands' listener is called: the worker's own may be others.
    const added = process.listeners('SIGINT').filter((listener) => !othersListening.includes(listener));
    expect(added).toHaveLength(1);
    (added[0] as (signal: NodeJS.Signals) => void)('SIGINT');
    expect(await Promise.all(runs)).toEqual(Array.from({ length: 12 }, () => 130));
    expect(counts).toEqual(Array.from({ length: 12 }, () => before));
    expect([process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')]).toEqual(before);
  });

  it('is the io’s own signal when it has one: nothing is added to the process', async () => {
    const before = process.listenerCount('SIGINT');
    const controller = new AbortController();
    let seen: AbortSignal | undefined;
    const probe = defineCommand(spec, (_args, io) => {
      seen = stopSignal(io);
      expect(process.listenerCount('SIGINT')).toBe(before);
      return Promise.resolve(0);
    });
    await probe([], { stdout: sink(), stderr: sink(), signal: controller.signal });
    expect(seen).toBe(controller.signal);
  });
});
