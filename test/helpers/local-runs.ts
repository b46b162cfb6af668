/**
 * For the end-to-end tests of local mode: a small drop that trains, and what the tests check
 * after a run (a model copied whole, a status that says succeeded, or a failure with its code
 * everywhere a user looks and no model left).
 */
import { expect } from 'vitest';
import type { RunStatus } from '../../lambdas/records/status/index.js';
import type { LocalMode } from '../../local/emulator/local-mode.js';
import { modelBytesAt } from '../../local/service/index.js';
import { BRISK_SERVICE } from '../../testkit/brisk-service.js';
import { modelObjects, type FinishedRun } from './local-mode.js';

/** model.json as far as the tests read it. */
export interface ModelJson {
  readonly model: {
    readonly id: string;
    readonly onnx_bytes: number;
    readonly options: { readonly decisions: Record<string, string> };
  };
  readonly run: { readonly run_id: string; readonly attempts: number; readonly labelled: number };
  readonly cost: { readonly credits: number };
}

/**
 * Model `modelId` is in models/<drop>/<model id>/ and nothing is lost: model.onnx byte for byte
 * as the service generated it, model.json beside it naming the run that made it.
 */
export function expectCopied(
  objects: ReadonlyMap<string, Buffer>,
  modelId: string,
  runId: string,
): ModelJson {
  const onnx = objects.get(`${modelId}/model.onnx`) ?? Buffer.alloc(0);
  expect(onnx.length).toBe(BRISK_SERVICE.modelBytes);
  expect(onnx.equals(modelBytesAt(modelId, 0, BRISK_SERVICE.modelBytes))).toBe(true);
  const record = JSON.parse(objects.get(`${modelId}/model.json`)?.toString() ?? 'null') as ModelJson;
  expect(record.model).toMatchObject({ id: modelId, onnx_bytes: BRISK_SERVICE.modelBytes });
  expect(record.run.run_id).toBe(runId);
  expect(record.cost.credits).toBe(1);
  return record;
}

/** status.json of a run that succeeded: the model copied, at the service's download step. */
export function expectSucceeded(status: RunStatus | null, runId: string): string {
  expect(status).toMatchObject({
    run_id: runId,
    state: 'succeeded',
    hopper_step: 'report',
    step: 5,
    next_action: 'download',
    error: null,
  });
  expect(status?.model?.bytes).toBe(BRISK_SERVICE.modelBytes);
  return status?.model_id ?? '';
}

/**
 * The run succeeded and saved its model: status.json says so, and models/<drop>/ holds that
 * model's two files and nothing else, copied whole (expectCopied). The model id and model.json.
 */
export async function expectSaved(
  local: LocalMode,
  run: FinishedRun,
): Promise<{ readonly modelId: string; readonly record: ModelJson }> {
  expect(run.outcome.status).toBe('SUCCEEDED');
  const modelId = expectSucceeded(run.status, run.execution.name);
  const objects = await modelObjects(local, run.execution.input.run.drop);
  expect([...objects.keys()].sort()).toEqual([`${modelId}/model.json`, `${modelId}/model.onnx`]);
  return { modelId, record: expectCopied(objects, modelId, run.execution.name) };
}

/**
 * The run failed with `code`: the FAILED outcome carries the code as its error and the status
 * message as its cause, status.json says failed, and no model object exists under models/<drop>/.
 */
export async function expectFailed(local: LocalMode, run: FinishedRun, code: string): Promise<RunStatus> {
  const status = run.status;
  expect(status).toMatchObject({ run_id: run.execution.name, state: 'failed', hopper_step: 'report' });
  expect(status?.error?.code).toBe(code);
  expect(run.outcome).toEqual({ status: 'FAILED', error: code, cause: status?.error?.message });
  expect(status?.model).toBeNull();
  expect([...(await modelObjects(local, run.execution.input.run.drop)).keys()]).toEqual([]);
  if (status === null) throw new Error('no status/<drop>.json');
  return status;
}
