/**
 * The repository stands on its own: no tracked file cites a file outside it (a folder beside
 * the clone, the design documents kept there and their sections, the service's published
 * interface), and a file that cites a contract item (B3, Part B) names the page that
 * holds it, docs/service-contract.md. Links of README.md and docs/: test/docs-links.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** What points outside the repository, and what it pointed at (escaped: this file cites none). */
const OUTSIDE: readonly (readonly [RegExp, string])[] = [
  [/\.\.\/shared\b/, 'a folder beside the clone'],
  [/\bDESIGN\.md\b|\bdesign\snotes\b/i, 'design documents outside the repository'],
  [/\bseed\/|\b000_[0-9a-f]{16}\b/, "the service's published interface, outside the repository"],
  [/\bnotes\/toolchain\b/, 'notes outside the repository'],
  [/\u00a7/, 'a section of a document outside the repository'],
];
/** A contract item: B1 to B10, or Part A/B. */
const CONTRACT_ITEM = /\bB(?:10|[1-9])\b|\bPart [AB]\b/;
/** The contract page, as a file outside docs/ names it, and as a page in docs/ may link it. */
const CONTRACT_PAGE = /\bdocs\/service-contract\.md\b/;
const CONTRACT_LINK = /\(service-contract\.md(?:#[\w-]+)?\)/;
/** Where contract items are cited: code and docs (not lock files, images or JSON figures). */
const CITING = /\.(?:ts|mjs|js|md)$/;

/** Each citation of a place outside the repository in `text` (the file at `path`), as `path:line: why`. */
function outsideCitations(path: string, text: string): string[] {
  const lines = text.split('\n');
  const found: string[] = [];
  lines.forEach((line, index) => {
    for (const [pattern, what] of OUTSIDE) {
      const match = pattern.exec(line);
      if (match !== null) found.push(`${path}:${String(index + 1)}: "${match[0]}": ${what}`);
    }
    const bare = /(?<![\w/-])service-contract\.md\b/.exec(line);
    if (bare !== null && !path.startsWith('docs/') && !CONTRACT_PAGE.test(line)) {
      found.push(`${path}:${String(index + 1)}: "${bare[0]}": name it docs/service-contract.md`);
    }
  });
  const names = CONTRACT_PAGE.test(text) || (path.startsWith('docs/') && CONTRACT_LINK.test(text));
  if (CITING.test(path) && path !== 'docs/service-contract.md' && !names) {
    const at = lines.findIndex((line) => CONTRACT_ITEM.test(line));
    if (at >= 0) {
      const item = CONTRACT_ITEM.exec(lines[at] ?? '')?.[0] ?? '';
      found.push(
        `${path}:${String(at + 1)}: "${item}": a contract item, in a file that names no docs/service-contract.md`,
      );
    }
  }
  return found;
}

/** The tracked files of the repository, but binary ones. */
function trackedTextFiles(): { path: string; text: string }[] {
  const paths = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' }).split('\0');
  return paths
    .filter((path) => path !== '')
    .map((path) => ({ path, bytes: readFileSync(join(ROOT, path)) }))
    .filter(({ bytes }) => !bytes.includes(0))
    .map(({ path, bytes }) => ({ path, text: bytes.toString('utf8') }));
}

describe('the repository, as tracked by git', () => {
  const files = trackedTextFiles();

  it('is read whole: code, tests, docs and scripts', () => {
    const paths = files.map((file) => file.path);
    expect(paths).toEqual(
      expect.arrayContaining(['README.md', 'docs/service-contract.md', 'lambdas/service-client/contract.ts']),
    );
    expect(paths.length).toBeGreaterThan(300);
  });

  it('cites no file outside it, and names docs/service-contract.md wherever it cites a contract item', () => {
    expect(files.flatMap(({ path, text }) => outsideCitations(path, text))).toEqual([]);
  });
});

/** A file's path as a folder's index.ts names it in its opening comment. */
const NAMED_FILE = /(?<![\w./-])((?:\.\.\/)*[\w.-]+(?:\/[\w.-]+)*\.(?:ts|mjs|js|md))\b/g;

/** The files an index.ts's opening comment names that are not there (relative to it or a folder above). */
function missingNamedFiles(index: string, text: string): string[] {
  const opening = /^\s*\/\*\*([\s\S]*?)\*\//.exec(text)?.[1] ?? '';
  const folders: string[] = [];
  for (let dir = dirname(index); dir !== '.'; dir = dirname(dir)) folders.push(dir);
  return [...opening.matchAll(NAMED_FILE)]
    .map((match) => match[1] ?? '')
    .filter((name) => !name.startsWith('dist/'))
    .filter((name) => ![...folders, '.'].some((dir) => existsSync(join(ROOT, dir, name))))
    .map((name) => `${index}: ${name}`);
}

describe('the folders of the code', () => {
  it('each index.ts names in its opening comment only files that exist', () => {
    const indexes = trackedTextFiles().filter(
      ({ path }) => /^(?:lambdas|infra|local|testkit|bench)\//.test(path) && path.endsWith('/index.ts'),
    );
    expect(indexes.map(({ path }) => path)).toContain('local/service/index.ts');
    expect(indexes.flatMap(({ path, text }) => missingNamedFiles(path, text))).toEqual([]);
  });
});

describe('the citation check', () => {
  // Built from pieces, so that this file itself cites nothing outside.
  const up = ['..', 'shared'].join('/');
  const design = 'DESIGN' + '.md';

  it('finds a path beside the clone, the design documents, the published interface and a section sign', () => {
    const text = [
      `see ${up}/notes.md`,
      `as ${design} section 1 says`,
      `the interface (${['seed', '000_' + '96912c29bf84499a.txt'].join('/')})`,
      `fixed by the project's ${['design', 'notes'].join(' ')}`,
      `(${design} \u00a73)`,
    ].join('\n');
    expect(outsideCitations('lambdas/x.ts', text).map((found) => found.split(': "')[0])).toEqual([
      'lambdas/x.ts:1',
      'lambdas/x.ts:2',
      'lambdas/x.ts:3',
      'lambdas/x.ts:4',
      'lambdas/x.ts:5',
      'lambdas/x.ts:5',
    ]);
  });

  it('wants the contract named by its path outside docs/, and a contract item beside it', () => {
    const bare = 'service-contract' + '.md';
    expect(outsideCitations('lambdas/x.ts', `// (${bare}, Part B)`)).toEqual([
      `lambdas/x.ts:1: "${bare}": name it docs/service-contract.md`,
      'lambdas/x.ts:1: "Part B": a contract item, in a file that names no docs/service-contract.md',
    ]);
    expect(outsideCitations('local/y.ts', '// one\n// the error body (B9)')).toEqual([
      'local/y.ts:2: "B9": a contract item, in a file that names no docs/service-contract.md',
    ]);
    expect(outsideCitations('local/y.ts', '// docs/service-contract.md, B9\n// and B10')).toEqual([]);
    expect(outsideCitations('docs/page.md', `[the contract](${bare}#b3-step-numbers): B3`)).toEqual([]);
    expect(outsideCitations('docs/page.md', 'B3 of the contract')).toHaveLength(1);
    expect(outsideCitations('bench/results.json', '"sha": "x+B3/y"')).toEqual([]);
  });
});
