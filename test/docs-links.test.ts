/**
 * Every relative link in README.md and docs/ stays in the repository and points at something:
 * a file or folder that exists, and for `file.md#anchor` a heading of that file.
 */
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { brokenLinks, headingAnchors, relativeLinks } from './helpers/doc-links.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DOCS = [
  join(ROOT, 'README.md'),
  ...readdirSync(join(ROOT, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.md'))
    .map((name) => join(ROOT, 'docs', name)),
];

describe('the links of README.md and docs/', () => {
  it('are found: README.md and the docs link to each other', () => {
    expect(DOCS.length).toBeGreaterThan(5);
    const links = DOCS.flatMap((file) => relativeLinks(readFileSync(file, 'utf8')));
    expect(links.length).toBeGreaterThan(20);
  });

  it.each(DOCS.map((file) => [file.slice(ROOT.length), file]))(
    '%s: every relative link stays in the repository and points at something',
    (_name, file) => {
      expect(brokenLinks(file, ROOT)).toEqual([]);
    },
  );
});

describe('the link checker', () => {
  const root = mkdtempSync(join(tmpdir(), 'hopper-doc-links-'));
  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
  });
  mkdirSync(join(root, 'docs'));
  writeFileSync(
    join(root, 'docs', 'other.md'),
    '# Other\n\n## The `hopper run` command\n\n## Twice\n\n## Twice\n',
  );
  mkdirSync(join(root, 'examples'));

  const check = (text: string): string[] => {
    writeFileSync(join(root, 'docs', 'page.md'), text);
    return brokenLinks(join(root, 'docs', 'page.md'), root);
  };

  it('accepts files, folders, headings (as GitHub slugs them) and links to elsewhere', () => {
    expect(
      check(
        [
          '# Page',
          '[a](other.md) [b](../examples) [c](other.md#the-hopper-run-command) [d](other.md#twice-1)',
          '[e](#page) [f](https://example.com/x.md) [g](mailto:ops@example.com) ![h](other.md)',
          '`[not a link](../../nowhere.md)`',
          '```',
          '[nor this](missing.md)',
          '```',
        ].join('\n'),
      ),
    ).toEqual([]);
  });

  it('reports a link that leaves the repository', () => {
    expect(check('[x](../../elsewhere/notes.md)')).toEqual([
      'docs/page.md:1 (../../elsewhere/notes.md): leaves the repository',
    ]);
  });

  it('reports a link to a file that does not exist, and an absolute path', () => {
    expect(check('text\n\n[x](gone.md) [y](/etc/hosts)')).toEqual([
      'docs/page.md:3 (gone.md): docs/gone.md does not exist',
      'docs/page.md:3 (/etc/hosts): an absolute path; link relative to the file',
    ]);
  });

  it('reports an anchor that names no heading, in another file or its own', () => {
    expect(check('# Page\n\n[x](other.md#nothing-here) [y](#no-such)')).toEqual([
      'docs/page.md:3 (other.md#nothing-here): docs/other.md has no heading #nothing-here',
      'docs/page.md:3 (#no-such): docs/page.md has no heading #no-such',
    ]);
  });

  it('reads links as markdown-it does and anchors as GitHub does', () => {
    expect(relativeLinks('[a](x.md) and [b](https://e.com)').map((link) => link.target)).toEqual(['x.md']);
    expect([
      ...headingAnchors('# What cdk-nag findings are acknowledged, and why\n## The `ServiceUrl`'),
    ]).toEqual(['what-cdk-nag-findings-are-acknowledged-and-why', 'the-serviceurl']);
  });
});
