/**
 * A record of the run gone at the service: 404 not_found on the run's dataset or model, because
 * someone deleted it there or the service purged it after it expired. Asking again cannot bring
 * it back, so the run fails at once (never a retry loop until the Task's timeout) with a code
 * that says which record went and what it cost:
 * - the dataset: `dataset_gone`, or `dataset_expired` once its `expires_at` has passed (purged);
 * - the model: `model_gone`; its training's credit is spent and the model is lost at the service.
 *
 * The handler wrapper (handler.ts) applies this rule to whatever a step throws, so every step
 * follows it. A 404 from an endpoint under the record (a label task, a file, a download link)
 * could mean only that part is unknown: the record itself is read, and only a record that answers
 * 404 too is reported gone.
 */
import {
  ENDPOINTS,
  endpointLabel,
  FILE_DOWNLOAD_LABEL,
  FILE_UPLOAD_LABEL,
} from '../../service-client/contract.js';
import { NotFoundError } from '../../service-client/errors.js';
import type { TrainingServiceClient } from '../../service-client/index.js';
import { RunError } from './errors.js';
import { datasetGoneMessage, modelGoneMessage } from './messages.js';
import type { RunState } from '../state/state.js';
import type { StepName } from '../state/vocabulary.js';

const GET_DATASET = endpointLabel(ENDPOINTS.getDataset);
const GET_MODEL = endpointLabel(ENDPOINTS.getModel);

/** Which record an endpoint acts on: its path starts with it, or it is the record's presigned URL. */
function recordOf(endpoint: string): 'dataset' | 'model' | undefined {
  if (endpoint === FILE_UPLOAD_LABEL || / \/v1\/datasets\/\{dataset\}/.test(endpoint)) return 'dataset';
  if (endpoint === FILE_DOWNLOAD_LABEL || / \/v1\/models\/\{model\}/.test(endpoint)) return 'model';
  return undefined;
}

/**
 * The run error when `error` is a 404 on the run's dataset or model that is gone at the service,
 * else undefined (the error is reported as it is).
 * @param service the step's client, to read the record when the 404 came from under it
 */
export async function goneRecordError(
  state: RunState,
  step: StepName,
  error: unknown,
  service: () => Promise<TrainingServiceClient>,
  now: number,
): Promise<RunError | undefined> {
  if (!(error instanceof NotFoundError)) return undefined;
  const { dataset, model } = state;
  const record = recordOf(error.endpoint);
  if (record === 'model' && model !== undefined) {
    if (!(await recordGone(error, GET_MODEL, async () => (await service()).getModel(model.id)))) {
      return undefined;
    }
    const gone = { id: model.id, status: model.status, endpoint: error.endpoint, step, drop: state.run.drop };
    return new RunError('model_gone', modelGoneMessage(gone), { cause: error });
  }
  if (record === 'dataset' && dataset !== undefined) {
    if (!(await recordGone(error, GET_DATASET, async () => (await service()).getDataset(dataset.id)))) {
      return undefined;
    }
    const expired = Date.parse(dataset.expiresAt) <= now;
    const gone = { id: dataset.id, expiresAt: dataset.expiresAt, expired, endpoint: error.endpoint, step };
    const message = datasetGoneMessage({ ...gone, trainingStarted: model !== undefined });
    return new RunError(expired ? 'dataset_expired' : 'dataset_gone', message, { cause: error });
  }
  return undefined;
}

/**
 * True when the record itself is gone: the 404 came from reading it (`readEndpoint`), or reading
 * it now answers 404 too. Any other answer or failure of that read leaves the first error.
 */
async function recordGone(
  error: NotFoundError,
  readEndpoint: string,
  read: () => Promise<unknown>,
): Promise<boolean> {
  if (error.endpoint === readEndpoint) return true;
  try {
    await read();
    return false;
  } catch (error) {
    return error instanceof NotFoundError;
  }
}
