#!/usr/bin/env node
/**
 * The production code's size and shape (lambdas/, infra/ and local/), as `npm test` prints
 * it: lines of code (non-blank, non-comment) per area and its sub-folders, so growth shows,
 * functions over 60 and over 80 lines. With --check it exits 1 on what costs a reader: any
 * function over 80 lines, or more than 5 over 60. The lines are counted, not capped. Import
 * circles are dependency-cruiser's to find (`npm run deps`).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import ts from 'typescript';

export const LIMITS = {
  functionLines: 80,
  longFunctionLines: 60,
  longFunctions: 5,
};
const ROOTS = ['lambdas', 'infra', 'local'];
const CODE = /\.(ts|mjs|js)$/;

function filesUnder(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** Non-blank lines that are not comments (block comments removed first, then `//` lines). */
function linesOfCode(text) {
  return text
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.trim().startsWith('//')).length;
}

/** Every function-like node of a file with its name and length in lines. */
function functionsOf(path, source) {
  const found = [];
  const visit = (node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const end = source.getLineAndCharacterOfPosition(node.end).line;
      found.push({ where: `${path}:${String(start + 1)}`, name: nameOf(node), lines: end - start + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function nameOf(node) {
  if (node.name !== undefined) return node.name.getText();
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const parent = node.parent;
  if (parent !== undefined && (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent))) {
    return parent.name.getText();
  }
  return '(anonymous)';
}

export function measure(root = process.cwd()) {
  const files = ROOTS.flatMap((dir) => filesUnder(join(root, dir))).filter(
    (path) => CODE.test(path) && !path.endsWith('.d.ts'),
  );
  let lines = 0;
  const functions = [];
  const perArea = new Map();
  for (const path of files) {
    const text = readFileSync(path, 'utf8');
    const shown = relative(root, path);
    const count = linesOfCode(text);
    lines += count;
    for (const area of areasOf(shown)) perArea.set(area, (perArea.get(area) ?? 0) + count);
    const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
    functions.push(...functionsOf(shown, source));
  }
  return {
    files: files.length,
    linesOfCode: lines,
    areas: [...perArea].sort(([a], [b]) => a.localeCompare(b)),
    over80: functions.filter((f) => f.lines > LIMITS.functionLines).sort((a, b) => b.lines - a.lines),
    over60: functions.filter((f) => f.lines > LIMITS.longFunctionLines).sort((a, b) => b.lines - a.lines),
  };
}

/** A file's area (its root: lambdas, infra, local) and, when it sits deeper, the sub-folder of it. */
function areasOf(shown) {
  const [area, sub, ...rest] = shown.split(sep);
  return rest.length === 0 ? [area] : [area, `${area}/${sub}`];
}

export function report(size) {
  const problems = [];
  if (size.over80.length > 0)
    problems.push(`${String(size.over80.length)} functions over ${String(LIMITS.functionLines)} lines`);
  if (size.over60.length > LIMITS.longFunctions)
    problems.push(
      `more than ${String(LIMITS.longFunctions)} functions over ${String(LIMITS.longFunctionLines)} lines`,
    );
  const out = [
    `production code: ${String(size.linesOfCode)} lines of code in ${String(size.files)} files`,
    ...size.areas.map(
      ([area, n]) =>
        `  ${(area.includes('/') ? `  ${area}/` : `${area}/`).padEnd(28)}${String(n).padStart(6)}`,
    ),
    `functions over ${String(LIMITS.longFunctionLines)} lines: ${String(size.over60.length)} (at most ${String(LIMITS.longFunctions)}); over ${String(LIMITS.functionLines)}: ${String(size.over80.length)} (none allowed)`,
    ...size.over60.map((f) => `  ${String(f.lines).padStart(4)}  ${f.name}  ${f.where}`),
  ];
  return { text: out.join('\n'), problems };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { text, problems } = report(measure());
  process.stdout.write(`${text}\n`);
  if (process.argv.includes('--check') && problems.length > 0) {
    process.stderr.write(`code-size: ${problems.join('; ')}\n`);
    process.exit(1);
  }
}
