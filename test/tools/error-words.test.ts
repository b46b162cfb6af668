/**
 * The words of the run errors are written once, in lambdas/core/errors/messages.ts (as
 * docs/architecture.md and lambdas/core/errors/index.ts say): no `new RunError(` (nor
 * `retryable(`) anywhere else in production code spells its message inline, as a string or
 * template literal; it calls a function of messages.ts, or passes on a message made there.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MESSAGES = 'lambdas/core/errors/messages.ts';

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** `file:line` of each RunError made with a literal message, in `text`. */
export function inlineMessages(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    const made =
      (ts.isNewExpression(node) && node.expression.getText(source) === 'RunError') ||
      (ts.isCallExpression(node) && node.expression.getText(source) === 'retryable');
    const message = made ? node.arguments?.[1] : undefined;
    if (message !== undefined && (ts.isStringLiteral(message) || ts.isTemplateLiteral(message))) {
      found.push(`${file}:${String(source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1)}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('run error words', () => {
  it('are written in messages.ts only: no RunError outside it spells its message inline', () => {
    const inline = ['lambdas', 'local', 'infra']
      .flatMap((dir) => sourceFiles(join(ROOT, dir)))
      .map((path) => relative(ROOT, path))
      .filter((file) => file !== MESSAGES)
      .flatMap((file) => inlineMessages(file, readFileSync(join(ROOT, file), 'utf8')));
    expect(inline).toEqual([]);
  });

  it('the rule sees a literal and a template message, and lets a call of messages.ts pass', () => {
    const text = [
      "throw new RunError('internal_error', 'lost');",
      'throw retryable(`storage_error`, `S3 said ${x}`);',
      "throw new RunError('no_credits', noCreditsMessage(id));",
    ].join('\n');
    expect(inlineMessages('x.ts', text)).toEqual(['x.ts:1', 'x.ts:2']);
  });
});
