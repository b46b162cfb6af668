#!/usr/bin/env node
/**
 * The production code's size and shape (lambdas/, infra/ and local/), as `npm test` prints
 * it: lines of code (non-blank, non-comment), functions over 60 and over 80 lines, folders of
 * more than 15 files, and runtime import cycles (type-only imports do not count). With --check it
 * exits 1 when a limit is passed: the line budget, any function over 80 lines, more than 5 over
 * 60, a folder over 15 files, or a cycle.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

export const LIMITS = {
  linesOfCode: 17_100,
  functionLines: 80,
  longFunctionLines: 60,
  longFunctions: 5,
  folderFiles: 15,
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

/** The production files a file imports at run time (not `import type`, not `export type`). */
function runtimeImports(path, source) {
  const targets = [];
  for (const statement of source.statements) {
    const isImport = ts.isImportDeclaration(statement);
    const isExport = ts.isExportDeclaration(statement);
    if (!isImport && !isExport) continue;
    if (statement.moduleSpecifier === undefined || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
    if (isImport && (statement.importClause?.isTypeOnly === true || typeOnlyBindings(statement))) continue;
    if (isExport && statement.isTypeOnly) continue;
    const specifier = statement.moduleSpecifier.text;
    if (!specifier.startsWith('.')) continue;
    targets.push(resolve(dirname(path), specifier).replace(/\.js$/, '.ts'));
  }
  return targets;
}

/** `import { type A, type B } from`: every binding type-only, so nothing is loaded. */
function typeOnlyBindings(statement) {
  const clause = statement.importClause;
  if (clause === undefined || clause.name !== undefined) return false;
  const bindings = clause.namedBindings;
  return bindings !== undefined && ts.isNamedImports(bindings) && bindings.elements.length > 0
    ? bindings.elements.every((element) => element.isTypeOnly)
    : false;
}

/** Strongly connected components of more than one file, or a file importing itself (Tarjan). */
function cycles(graph) {
  let index = 0;
  const stack = [];
  const state = new Map();
  const found = [];
  const connect = (node) => {
    state.set(node, { index, low: index, onStack: true });
    index += 1;
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (!state.has(next)) {
        connect(next);
        state.get(node).low = Math.min(state.get(node).low, state.get(next).low);
      } else if (state.get(next).onStack) {
        state.get(node).low = Math.min(state.get(node).low, state.get(next).index);
      }
    }
    if (state.get(node).low !== state.get(node).index) return;
    const component = [];
    let member;
    do {
      member = stack.pop();
      state.get(member).onStack = false;
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(component);
  };
  for (const node of graph.keys()) if (!state.has(node)) connect(node);
  return found;
}

export function measure(root = process.cwd()) {
  const files = ROOTS.flatMap((dir) => filesUnder(join(root, dir))).filter(
    (path) => CODE.test(path) && !path.endsWith('.d.ts'),
  );
  let lines = 0;
  const functions = [];
  const graph = new Map();
  const perFolder = new Map();
  for (const path of files) {
    const text = readFileSync(path, 'utf8');
    const shown = relative(root, path);
    lines += linesOfCode(text);
    perFolder.set(dirname(shown), (perFolder.get(dirname(shown)) ?? 0) + 1);
    const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
    functions.push(...functionsOf(shown, source));
    graph.set(path, runtimeImports(path, source));
  }
  return {
    files: files.length,
    linesOfCode: lines,
    over80: functions.filter((f) => f.lines > LIMITS.functionLines).sort((a, b) => b.lines - a.lines),
    over60: functions.filter((f) => f.lines > LIMITS.longFunctionLines).sort((a, b) => b.lines - a.lines),
    bigFolders: [...perFolder].filter(([, count]) => count > LIMITS.folderFiles),
    cycles: cycles(graph).map((component) => component.map((path) => relative(root, path))),
  };
}

function report(size) {
  const problems = [];
  if (size.linesOfCode > LIMITS.linesOfCode)
    problems.push(`over the ${String(LIMITS.linesOfCode)}-line budget`);
  if (size.over80.length > 0)
    problems.push(`${String(size.over80.length)} functions over ${String(LIMITS.functionLines)} lines`);
  if (size.over60.length > LIMITS.longFunctions)
    problems.push(
      `more than ${String(LIMITS.longFunctions)} functions over ${String(LIMITS.longFunctionLines)} lines`,
    );
  if (size.bigFolders.length > 0) problems.push(`folders of more than ${String(LIMITS.folderFiles)} files`);
  if (size.cycles.length > 0) problems.push('runtime import cycles');
  const out = [
    `production code: ${String(size.linesOfCode)} lines of code in ${String(size.files)} files (budget ${String(LIMITS.linesOfCode)})`,
    `functions over ${String(LIMITS.longFunctionLines)} lines: ${String(size.over60.length)} (at most ${String(LIMITS.longFunctions)}); over ${String(LIMITS.functionLines)}: ${String(size.over80.length)} (none allowed)`,
    ...size.over60.map((f) => `  ${String(f.lines).padStart(4)}  ${f.name}  ${f.where}`),
    `folders over ${String(LIMITS.folderFiles)} files: ${size.bigFolders.length === 0 ? 'none' : size.bigFolders.map(([dir, n]) => `${dir} (${String(n)})`).join(', ')}`,
    `runtime import cycles: ${size.cycles.length === 0 ? 'none' : ''}`,
    ...size.cycles.map((component) => `  ${component.join(' -> ')}`),
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
