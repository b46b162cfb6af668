/**
 * The pipeline's vocabulary (lambdas/core/state/vocabulary.ts, the contract's NEXT_ACTIONS, the run
 * error codes) reaches every place that must know it:
 * - at compile time: a scratch build with a fake next_action, a fake stop and a fake step added
 *   fails, and its errors name exactly the places docs/pipeline.md ("How to add") lists;
 * - at run time: the synthesized definition routes every next_action of each record, has a Pass
 *   state for every stop, the report words every stop and every run error code, and every Task's
 *   entry file runs the step the registry says.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { handlerPath, TASKS } from '../../infra/tasks.js';
import { RUN_ERROR_CODES, codedMessage, FINAL_ERROR, lambdaCause } from '../../lambdas/core/errors/index.js';
import type { RunState } from '../../lambdas/core/state/index.js';
import { STEPS, STOPS, type StopName } from '../../lambdas/core/state/index.js';
import { NEXT_ACTIONS, type NextAction } from '../../lambdas/service-client/index.js';
import { reportOf } from '../../lambdas/steps/report.js';
import type { AslState } from '../../local/emulator/definition.js';
import { synthesizeLocalDefinition } from './helpers.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const path = (file: string) => `${ROOT}${file}`;

/** `text` with `insert` placed right after `anchor` (which must be there once). */
function inserted(text: string, anchor: string, insert: string): string {
  const at = text.indexOf(anchor);
  if (at < 0 || text.indexOf(anchor, at + 1) >= 0) throw new Error(`anchor ${anchor} not found once`);
  return text.slice(0, at + anchor.length) + insert + text.slice(at + anchor.length);
}

/** The sources with a fake next_action, stop and step added, as a new engineer would add them. */
const SCRATCH: Readonly<Record<string, (text: string) => string>> = {
  [path('lambdas/service-client/contract.ts')]: (text) =>
    inserted(text, 'export const NEXT_ACTIONS = {\n', "  fake_action: { record: 'dataset', steps: [2] },\n"),
  [path('lambdas/core/state/vocabulary.ts')]: (text) =>
    inserted(
      inserted(text, 'export const STOPS = {\n', "  FakeStop: 'not_resumable',\n"),
      'export const STEPS = {\n',
      "  fake_step: { task: 'FakeStep', slot: 'dataset', needs: ['dataset'] },\n",
    ),
};

/** The files whose compile errors the scratch build is about: every consumer of the vocabulary. */
const ROOTS = [
  'infra/state-machine.ts',
  'infra/tasks.ts',
  'lambdas/steps/report.ts',
  'lambdas/records/status/usage.ts',
];

interface Diagnostic {
  readonly file: string;
  readonly line: number;
  readonly text: string;
}

/**
 * Type-checks ROOTS and the project files they import, with SCRATCH applied: the compiler API,
 * no emit, no incremental state. Only the project's own modules are read: packages (CDK, AWS SDK,
 * undici, Node's types) stay unresolved, so they type as `any`, which keeps this a few seconds of
 * CPU and cannot hide a vocabulary error (those are between the project's own types). The errors
 * that untyped packages cause elsewhere are not about the fakes and are left out below.
 */
function scratchDiagnostics(): Diagnostic[] {
  const configPath = path('tsconfig.json');
  const config = ts.parseJsonConfigFileContent(
    ts.readConfigFile(configPath, (file) => ts.sys.readFile(file)).config,
    ts.sys,
    ROOT,
  );
  const options: ts.CompilerOptions = { ...config.options, noEmit: true, incremental: false, types: [] };
  const host = ts.createCompilerHost(options);
  const readFile = host.readFile.bind(host);
  host.readFile = (file) => {
    const text = readFile(file);
    const edit = SCRATCH[file];
    return text === undefined || edit === undefined ? text : edit(text);
  };
  host.resolveModuleNameLiterals = (literals, containingFile, _redirected, resolutionOptions) =>
    literals.map((literal) =>
      literal.text.startsWith('.')
        ? ts.resolveModuleName(literal.text, containingFile, resolutionOptions, host)
        : { resolvedModule: undefined },
    );
  const program = ts.createProgram({ rootNames: ROOTS.map(path), options, host });
  return ts
    .getPreEmitDiagnostics(program)
    .filter((diagnostic) => diagnostic.file !== undefined)
    .map((diagnostic) => {
      const file = diagnostic.file as ts.SourceFile;
      const { line } = file.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
      return {
        file: file.fileName.slice(ROOT.length),
        line: line + 1,
        text: ts.flattenDiagnosticMessageText(diagnostic.messageText, ' '),
      };
    });
}

/** What a diagnostic says about the fakes, or null when it is about something else. */
const FAKES = /fake_action|FakeStop|not_resumable|FakeStep|fake_step/;

describe('compile-time coverage: adding to the vocabulary makes the compiler list every place to change', () => {
  it('a fake next_action, stop and step fail the build exactly where docs/pipeline.md says', () => {
    // The scratch edits really apply (a changed anchor would make this test pass vacuously).
    for (const [file, edit] of Object.entries(SCRATCH)) {
      expect(edit(readFileSync(file, 'utf8'))).toMatch(/fake_action|FakeStop/);
    }
    const diagnostics = scratchDiagnostics();
    const where = diagnostics.flatMap(({ file, text }) => {
      // An `any` indexing a table that lists the fake is a cascade of the scratch build's record
      // type (the service's record parsed with the fake), not a place to change.
      if (text.includes("expression of type 'any' can't be used to index")) return [];
      const fake = FAKES.exec(text)?.[0];
      return fake === undefined ? [] : [`${file}: ${fake}`];
    });
    expect(where.sort()).toEqual(
      [
        // Both Choices must say where the new next_action goes (a state, or 'unexpected').
        'infra/state-machine.ts: fake_action',
        'infra/state-machine.ts: fake_action',
        // The report must word the new stop (the exhaustive switch's never check).
        'lambdas/steps/report.ts: not_resumable',
        // The new step's Task needs its Lambda's settings, and its transitions are counted.
        'infra/tasks.ts: FakeStep',
        'lambdas/records/status/usage.ts: fake_step',
      ].sort(),
    );
    const report = diagnostics.find(
      (diagnostic) => diagnostic.file === 'lambdas/steps/report.ts' && FAKES.test(diagnostic.text),
    );
    expect(report?.text).toMatch(/not assignable to type 'never'/);
  }, 60_000);
});

describe('run-time coverage', () => {
  const { definition } = synthesizeLocalDefinition();
  const states = definition.States;

  /** The next_action values a Choice has a rule for (StringEquals on `<slot>.nextAction`, Or included). */
  function routed(choice: AslState): string[] {
    const values: string[] = [];
    const visit = (rule: Record<string, unknown>): void => {
      if (typeof rule.StringEquals === 'string') values.push(rule.StringEquals);
      for (const inner of (rule.Or as Record<string, unknown>[] | undefined) ?? []) visit(inner);
    };
    for (const rule of choice.Choices as Record<string, unknown>[]) visit(rule);
    return values.sort();
  }

  function actionsOf(record: 'dataset' | 'model'): NextAction[] {
    return (Object.keys(NEXT_ACTIONS) as NextAction[])
      .filter((action) => [record, 'any'].includes(NEXT_ACTIONS[action].record))
      .sort();
  }

  it("routes every next_action the contract gives a record, on that record's Choice", () => {
    expect(routed(states.RouteDataset as AslState)).toEqual(actionsOf('dataset'));
    expect(routed(states.RouteModel as AslState)).toEqual(actionsOf('model'));
    // Everything else, on either record, is a stop rather than a dead end.
    expect(states.RouteDataset?.Default).toBe('UnexpectedNextAction');
    expect(states.RouteModel?.Default).toBe('UnexpectedNextAction');
  });

  it('has a Pass state putting each stop code at $.stop and going on to the report', () => {
    const passes = Object.entries(states).filter(([, state]) => state.Type === 'Pass');
    expect(passes.map(([name]) => name).sort()).toEqual(Object.keys(STOPS).sort());
    for (const [name, pass] of passes) {
      expect(pass).toMatchObject({
        Result: { code: STOPS[name as StopName] },
        ResultPath: '$.stop',
        Next: 'Report',
      });
    }
  });

  const run: RunState['run'] = {
    runId: 'drop-1',
    bucket: 'b',
    drop: 'drop',
    key: 'inbox/drop/train.json',
    etag: 'e',
    startedAt: '2026-01-01T00:00:00.000Z',
  };

  it.each(Object.values(STOPS))('the report words stop %s with its own code', (code) => {
    const report = reportOf({ run, stop: { code } });
    expect(report).toMatchObject({ outcome: 'failed', error: { code } });
    expect(report.error?.message).not.toContain('unknown code');
  });

  it('the report keeps every run error code a step throws', () => {
    for (const code of RUN_ERROR_CODES) {
      const message = codedMessage(code, 'what to do');
      const report = reportOf({
        run,
        failure: { Error: FINAL_ERROR, Cause: lambdaCause(FINAL_ERROR, message) },
      });
      expect(report.error).toEqual({ code, message: 'what to do' });
    }
  });

  it("every Task's entry file runs the step the registry derives it from, in the slot the step declares", async () => {
    expect(TASKS.map((task) => task.step)).toEqual(Object.keys(STEPS));
    for (const task of TASKS) {
      const module = (await import(handlerPath(task.handlerFile))) as { handler: { step: unknown } };
      expect(module.handler.step).toBe(task.step);
      expect(states[task.name]).toMatchObject({ Type: 'Task', ResultPath: `$.${STEPS[task.step].slot}` });
    }
  }, 60_000);
});
