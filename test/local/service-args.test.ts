/** Argument parsing of `hopper service` (local/cli/service.ts), without spawning it. */
import { describe, expect, it } from 'vitest';
import { CliUsageError, helpText, parseCommand } from '../../local/cli/command.js';
import { parseFaultFlag, SERVICE_SPEC, serviceOptions } from '../../local/cli/service.js';
import { DEFAULT_OPTIONS } from '../../local/service/index.js';
import type { SimulatedServiceOptions } from '../../local/service/index.js';

/** `hopper service <argv>` read as the command reads it; --help gives 'help'. */
function parseServiceArgs(argv: readonly string[]): Partial<SimulatedServiceOptions> | 'help' {
  const args = parseCommand(SERVICE_SPEC, argv);
  return args === 'help' ? 'help' : serviceOptions(args);
}

function run(argv: string[]): Partial<SimulatedServiceOptions> {
  const options = parseServiceArgs(argv);
  if (options === 'help') throw new Error('expected options');
  return options;
}

function usageError(argv: string[]): string {
  try {
    parseServiceArgs(argv);
  } catch (error) {
    if (error instanceof CliUsageError) return error.message;
    throw error;
  }
  throw new Error(`no usage error for ${argv.join(' ')}`);
}

describe('parseServiceArgs', () => {
  it('gives no options for no flags (every knob keeps its default)', () => {
    expect(run([])).toEqual({});
  });

  it('maps the README example to port, api key and credits', () => {
    expect(run(['--port', '8787', '--api-key', 'dev-key', '--credits', '10'])).toEqual({
      port: 8787,
      apiKey: 'dev-key',
      credits: 10,
    });
  });

  it('has a kebab-case flag for every knob', () => {
    const options = run([
      '--host=127.0.0.1',
      '--port=1',
      '--file-port=2',
      '--api-key=k',
      '--credits=3',
      '--seed=-4',
      '--max-requests-per-second=20',
      '--reading-ms=5',
      '--structuring-ms=6',
      '--queued-ms=7',
      '--training-ms=8',
      '--fail-trainings=9',
      '--unreadable',
      '--held-out-count=10',
      '--label-choices=a,b',
      '--encoders=x:X:default,y:Y',
      '--upload-url-ttl-ms=11',
      '--download-url-ttl-ms=12',
      '--model-bytes=13',
      '--dataset-ttl-ms=14',
      '--model-files-ttl-ms=15',
      '--manual-clock-start=2026-01-01T00:00:00Z',
      '--fault=startTraining:429',
      '--rename-next-action=start_training=celebrate',
    ]);
    expect(options).toEqual({
      host: '127.0.0.1',
      port: 1,
      filePort: 2,
      apiKey: 'k',
      credits: 3,
      seed: -4,
      maxRequestsPerSecond: 20,
      readingMs: 5,
      structuringMs: 6,
      queuedMs: 7,
      trainingMs: 8,
      failTrainings: 9,
      unreadable: true,
      heldOutCount: 10,
      labelChoices: ['a', 'b'],
      encoders: [
        { id: 'x', name: 'X', default: true },
        { id: 'y', name: 'Y', default: false },
      ],
      uploadUrlTtlMs: 11,
      downloadUrlTtlMs: 12,
      modelBytes: 13,
      datasetTtlMs: 14,
      modelFilesTtlMs: 15,
      manualClockStart: '2026-01-01T00:00:00Z',
      faults: [{ endpoint: 'startTraining', kind: '429' }],
      renameNextActions: { start_training: 'celebrate' },
    });
    const knobs = Object.keys(DEFAULT_OPTIONS).concat('manualClockStart').sort();
    expect(Object.keys(options).sort()).toEqual(knobs);
  });

  it('collects repeated --fault flags in order, with their settings', () => {
    expect(
      run(['--fault', 'startTraining:429:count=2,retryAfterSeconds=1', '--fault', '*:503:rate=0.1']).faults,
    ).toEqual([
      { endpoint: 'startTraining', kind: '429', count: 2, retryAfterSeconds: 1 },
      { endpoint: '*', kind: '503', rate: 0.1 },
    ]);
    expect(parseFaultFlag('fileDownload:cut:cutAfterBytes=10')).toEqual({
      endpoint: 'fileDownload',
      kind: 'cut',
      cutAfterBytes: 10,
    });
    expect(parseFaultFlag('getDataset:stall:stallMs=250,count=1')).toEqual({
      endpoint: 'getDataset',
      kind: 'stall',
      stallMs: 250,
      count: 1,
    });
  });

  it('answers --help and -h with a text listing every flag and its default', () => {
    for (const flag of ['--help', '-h']) expect(parseServiceArgs([flag])).toBe('help');
    const text = helpText(SERVICE_SPEC);
    for (const name of ['--port', '--file-port', '--reading-ms', '--encoders', '--fault', '--unreadable']) {
      expect(text).toContain(name);
    }
    expect(text).toContain('(default: 10)');
    expect(text).toContain('(default: 3600000)');
  });

  it.each([
    [['--credits', 'ten'], /--credits: expected an integer >= 0, got "ten"/],
    [['--port=-1'], /--port: expected an integer 0\.\.65535/],
    [['--port', '-1'], /--port/],
    [['--reading-ms', '1.5'], /--reading-ms: expected an integer >= 0/],
    [['--file-port', '70000'], /--file-port: expected an integer 0\.\.65535, got "70000"/],
    [['--seed', 'x'], /--seed: expected an integer/],
    [['--bogus'], /--bogus/],
    [['--credits'], /--credits/],
    [['stray'], /stray/],
    [['--manual-clock-start', 'yesterday'], /--manual-clock-start: expected an ISO time/],
    [['--encoders', 'a:A,b:B'], /--encoders: exactly one encoder must be marked :default/],
    [['--encoders', 'a'], /--encoders: expected ID:NAME\[:default\]/],
    [['--label-choices', 'a,a'], /--label-choices repeat/],
    [['--label-choices', 'a,,b'], /--label-choices must be non-empty strings/],
    [['--fault', 'nowhere:429'], /unknown endpoint nowhere/],
    [['--fault', 'startTraining:418'], /unknown kind 418/],
    [['--fault', 'startTraining'], /--fault: expected ENDPOINT:KIND/],
    [['--fault', 'startTraining:429:count=two'], /--fault: count expects an integer >= 0/],
    [['--fault', 'startTraining:429:rate=2'], /rate must be in 0\.\.1/],
    [['--fault', 'startTraining:429:often=1'], /--fault: expected ENDPOINT:KIND/],
  ])('refuses %j with a message naming the flag', (argv, message) => {
    expect(usageError(argv)).toMatch(message);
  });
});

describe('--rename-next-action', () => {
  it('collects repeated FROM=TO pairs', () => {
    expect(run(['--rename-next-action', 'structure=a', '--rename-next-action', 'download=b'])).toEqual({
      renameNextActions: { structure: 'a', download: 'b' },
    });
  });

  it('names the flag when FROM is not a next_action of the contract', () => {
    expect(usageError(['--rename-next-action', 'dance=a'])).toMatch(
      /^--rename-next-action: dance is not a next_action/,
    );
  });

  it('names the flag when the pair is malformed', () => {
    expect(usageError(['--rename-next-action', 'structure'])).toMatch(
      /--rename-next-action: expected FROM=TO/,
    );
  });
});
