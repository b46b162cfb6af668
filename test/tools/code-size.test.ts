/**
 * scripts/code-size.mjs, the production code's size and shape that `npm test` prints (and with
 * --check enforces what costs a reader: long functions), measured on a small tree of its own.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module script without declarations
import { measure, report } from '../../scripts/code-size.mjs';

interface Size {
  files: number;
  linesOfCode: number;
  areas: [string, number][];
  over60: { name: string; lines: number }[];
  over80: { name: string; lines: number }[];
}

let root = '';
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function tree(files: Record<string, string>): Promise<Size> {
  root = await mkdtemp(join(tmpdir(), 'hopper-code-size-'));
  for (const dir of ['lambdas', 'infra', 'local']) await mkdir(join(root, dir), { recursive: true });
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(root, path, '..'), { recursive: true });
    await writeFile(join(root, path), text);
  }
  return (measure as (root: string) => Size)(root);
}

const problemsOf = (size: Size): string[] =>
  (report as (size: Size) => { text: string; problems: string[] })(size).problems;

const body = (lines: number): string =>
  Array.from({ length: lines }, (_, i) => `  const v${String(i)} = ${String(i)};`).join('\n');

describe('scripts/code-size.mjs', () => {
  it('counts lines of code without blank lines and comments, and finds long functions', async () => {
    const size = await tree({
      'lambdas/a.ts': `/**\n * A doc comment.\n */\n// a line comment\n\nexport function long(): void {\n${body(85)}\n}\nexport const mid = (): void => {\n${body(65)}\n};\n`,
      'local/b.d.ts': 'export declare const x: number;\n',
    });
    expect(size.files).toBe(1);
    expect(size.linesOfCode).toBe(85 + 65 + 4);
    expect(size.over80.map((f) => [f.name, f.lines])).toEqual([['long', 87]]);
    expect(size.over60.map((f) => f.name)).toEqual(['long', 'mid']);
    expect(problemsOf(size)).toEqual(['1 functions over 80 lines']);
  });

  it('counts lines per area and per sub-folder of an area, and caps neither them nor a folder', async () => {
    const files: Record<string, string> = {
      'infra/app.ts': 'export const app = 1;\n',
      'local/cli/deep/er.ts': 'export const a = 1;\nexport const b = 2;\n',
      'local/cli/c.ts': 'export const c = 3;\n',
      'lambdas/run/big.ts': Array.from({ length: 17_000 }, (_, i) => `export const v${String(i)} = 0;`).join(
        '\n',
      ),
    };
    for (let i = 0; i < 16; i++) files[`lambdas/many/f${String(i)}.ts`] = `export const f = ${String(i)};\n`;
    const size = await tree(files);
    expect(size.linesOfCode).toBe(17_020);
    expect(size.areas).toEqual([
      ['infra', 1],
      ['lambdas', 17_016],
      ['lambdas/many', 16],
      ['lambdas/run', 17_000],
      ['local', 3],
      ['local/cli', 3],
    ]);
    expect(problemsOf(size)).toEqual([]);
  });

  it('fails on more than 5 functions over 60 lines, and on none but 5', async () => {
    const mid = (n: number): string => `export function mid${String(n)}(): void {\n${body(62)}\n}\n`;
    const five = await tree({ 'local/a.ts': [1, 2, 3, 4, 5].map(mid).join('') });
    expect(problemsOf(five)).toEqual([]);
    const six = await tree({ 'local/a.ts': [1, 2, 3, 4, 5, 6].map(mid).join('') });
    expect(problemsOf(six)).toEqual(['more than 5 functions over 60 lines']);
  });
});
