/**
 * Every `hopper ...` command line in README.md and docs/*.md, in code blocks and inline code,
 * is checked against the command line's own table (each command's CommandSpec): the command
 * exists and takes every flag the line gives it. The docs cannot name a flag the CLI lacks.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { CommandSpec } from '../local/cli/command.js';
import { COMMANDS } from '../local/cli/index.js';

const ROOT = new URL('../', import.meta.url);
const FILES = [
  'README.md',
  ...readdirSync(new URL('docs/', ROOT))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** Flags `hopper` itself takes, without a command. */
const TOP_LEVEL = new Set(['--help', '-h', '--version']);

interface CommandLine {
  readonly file: string;
  readonly line: number;
  /** What follows `hopper`. */
  readonly words: string;
}

/** A line of a shell snippet as `hopper` runs it: after env assignments and npx, before a comment. */
function shellCommand(text: string): string | undefined {
  const bare = text
    .replace(/\s+#.*$/, '')
    .replace(/^(?:[A-Z_]+=\S*\s+)*/, '')
    .trim();
  const service = /^npm run service(?: -- (.*))?$/.exec(bare);
  if (service !== null) return `service ${service[1] ?? ''}`;
  return /^(?:npx |node bin\/)?hopper(?:\.mjs)?(?: (.*))?$/.exec(bare)?.[1] ?? undefined;
}

function commandLines(file: string): CommandLine[] {
  const lines = readFileSync(new URL(file, ROOT), 'utf8').split('\n');
  const found: CommandLine[] = [];
  let fenced = false;
  lines.forEach((text, index) => {
    if (text.trimStart().startsWith('```')) {
      fenced = !fenced;
      return;
    }
    const spans = fenced ? [text] : [...text.matchAll(/`([^`]+)`/g)].map((match) => match[1] ?? '');
    for (const span of spans) {
      const words = shellCommand(span.replace(/\\\|/g, '|'));
      if (words !== undefined) found.push({ file, line: index + 1, words });
    }
  });
  return found;
}

const SPECS = new Map<string, CommandSpec>();
for (const [name, load] of Object.entries(COMMANDS)) SPECS.set(name, (await load()).spec);

/** What is wrong with the command line, or undefined. */
function problem(words: string): string | undefined {
  const [command = '', ...rest] = words.split(/\s+/).filter((word) => word !== '');
  const flags = rest.flatMap((word) => /^[[(]?(--?[a-z][a-z0-9-]*)/.exec(word)?.[1] ?? []);
  if (command === '' || TOP_LEVEL.has(command) || command.startsWith('<')) return undefined;
  const spec = SPECS.get(command);
  if (spec === undefined) return `no command "${command}"`;
  const unknown = flags.filter((flag) => !['--help', '-h'].includes(flag) && !(flag.slice(2) in spec.flags));
  return unknown.length === 0 ? undefined : `hopper ${command} takes no ${unknown.join(', ')}`;
}

const LINES = FILES.flatMap(commandLines);

describe('the hopper command lines in README.md and docs/', () => {
  it('finds them, for every command', () => {
    expect(LINES.length).toBeGreaterThan(40);
    const named = new Set(LINES.map(({ words }) => words.split(' ')[0]));
    for (const command of SPECS.keys()) expect(named).toContain(command);
  });

  it('name only commands and flags the command line has', () => {
    const wrong = LINES.flatMap(({ file, line, words }) => {
      const why = problem(words);
      return why === undefined ? [] : [`${file}:${String(line)}: hopper ${words}: ${why}`];
    });
    expect(wrong).toEqual([]);
  });

  it('would notice a flag or a command the command line lacks', () => {
    expect(problem('models --limit 10 --bogus')).toBe('hopper models takes no --bogus');
    expect(problem('run path/to/drop [--data-dir DIR]')).toBe('hopper run takes no --data-dir');
    expect(problem('check examples/reviews --out x')).toBe('hopper check takes no --out');
    expect(problem('sweep examples/reviews')).toBe('no command "sweep"');
    expect(problem('models [--limit N | --all] [--status S] [--dataset ID]')).toBeUndefined();
    expect(shellCommand('HOPPER_API_KEY=... npx hopper run x --service-url https://h   # a comment')).toBe(
      'run x --service-url https://h',
    );
    expect(shellCommand('npm run service -- --port 8787')).toBe('service --port 8787');
    expect(shellCommand('hopper: succeeded in 19.1 s')).toBeUndefined();
  });
});
