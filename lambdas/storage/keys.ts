/**
 * The bucket's layout (docs/drop-format.md), in one place:
 *   inbox/<drop>/...                           what the user drops; train.json last
 *   status/<drop>.json                         live state of the drop's latest run
 *   models/<drop>/<model id>/model.onnx        the trained model
 *   models/<drop>/<model id>/model.json        its record, the run's summary and cost, its lineage
 *   models/<drop>/current.json                 the drop's current (promoted) model
 *   status/.events/<run id>/<kind>             marks a run event put (lambdas/records/events/event-bus.ts)
 *   status/.training/<drop>.json               which run of the drop may hold a credit (training-claim.ts)
 *   status/.runs/<drop>/<run id>.json          each run's final status: the drop's runs history
 *   status/.credits/ledger.json                the credits taken from the budget (credit-ledger.ts)
 *   inbox/.hopper-doctor/<probe id>/train.json `hopper doctor`'s probe: reaches the trigger, starts no run
 *   status/.doctor/<probe id>.json             the trigger's record that it saw that probe
 */
export const INBOX_PREFIX = 'inbox/';
export const STATUS_PREFIX = 'status/';
export const MODELS_PREFIX = 'models/';
export const TRAIN_JSON = 'train.json';
export const DEFAULT_LABELS_FILE = 'labels.csv';

/** The pattern the EventBridge rule matches (`inbox/*\/train.json`), as S3 wildcard text. */
export const TRAIN_JSON_KEY_WILDCARD = `${INBOX_PREFIX}*/${TRAIN_JSON}`;

export function inboxPrefix(drop: string): string {
  return `${INBOX_PREFIX}${drop}/`;
}

export function inboxKey(drop: string, fileName: string): string {
  return `${inboxPrefix(drop)}${fileName}`;
}

export function statusKey(drop: string): string {
  return `${STATUS_PREFIX}${drop}.json`;
}

/** Where the run event markers are: under status/, apart from `status/<drop>.json` by the dot. */
export const EVENT_MARKERS_PREFIX = `${STATUS_PREFIX}.events/`;

/** The marker of a run's event of `kind` (`started`, `succeeded`, `failed`). */
export function eventMarkerKey(runId: string, kind: string): string {
  return `${EVENT_MARKERS_PREFIX}${runId}/${kind}`;
}

/** The drop's training claim: the one run of the drop that may start a training now. */
export function trainingClaimKey(drop: string): string {
  return `${STATUS_PREFIX}.training/${drop}.json`;
}

/** The credit budget's ledger: one for the bucket (lambdas/ownership/credit-ledger.ts). */
export const CREDIT_LEDGER_KEY = `${STATUS_PREFIX}.credits/ledger.json`;

/** Where the run's final status is kept, beside the other runs of its drop. */
export function runRecordKey(drop: string, runId: string): string {
  return `${runRecordsPrefix(drop)}${runId}.json`;
}

/**
 * The most bytes (UTF-8) of a drop's name that leave each of its keys within S3's 1024: the
 * longest is its run record's, whose run id is an execution name (Step Functions: 80 characters).
 */
export const MAX_DROP_NAME_BYTES = 1024 - runRecordKey('', 'r'.repeat(80)).length;

export function runRecordsPrefix(drop: string): string {
  return `${STATUS_PREFIX}.runs/${drop}/`;
}

export function modelPrefix(drop: string, modelId: string): string {
  return `${MODELS_PREFIX}${drop}/${modelId}/`;
}

export function modelFileKey(drop: string, modelId: string): string {
  return `${modelPrefix(drop, modelId)}model.onnx`;
}

export function modelRecordKey(drop: string, modelId: string): string {
  return `${modelPrefix(drop, modelId)}model.json`;
}

/** The drop's current (promoted) model (lambdas/steps/lineage.ts). */
export function currentModelKey(drop: string): string {
  return `${MODELS_PREFIX}${drop}/current.json`;
}

/**
 * The drop of `inbox/<drop>/train.json`, or null for any other key. The S3 wildcard also
 * matches deeper keys (`inbox/a/b/train.json`); those are not drops.
 */
export function dropOfTrainJsonKey(key: string): string | null {
  const match = /^inbox\/([^/]+)\/train\.json$/.exec(key);
  return match?.[1] ?? null;
}

/**
 * `hopper doctor`'s probes (local/cli/doctor.ts): `inbox/.hopper-doctor/<probe id>/train.json`
 * matches the rule's wildcard, so it takes the way a drop's train.json takes to the trigger, yet is
 * one folder deeper than any drop's train.json (`inbox/<drop>/train.json`), so it is never one.
 */
export const DOCTOR_PROBE_PREFIX = `${INBOX_PREFIX}.hopper-doctor/`;
/** Where the trigger records each probe it saw: under status/, beside the other dot folders. */
export const DOCTOR_SEEN_PREFIX = `${STATUS_PREFIX}.doctor/`;
/** A probe id: letters, digits, `-` and `_`, up to 64. */
const PROBE_ID = /^[A-Za-z0-9_-]{1,64}$/;

export function doctorProbeKey(probeId: string): string {
  if (!PROBE_ID.test(probeId)) throw new RangeError(`${probeId} is not a probe id ([A-Za-z0-9_-]{1,64})`);
  return `${DOCTOR_PROBE_PREFIX}${probeId}/${TRAIN_JSON}`;
}

/** The probe id of a probe's key, or null for any other key. */
export function probeOfKey(key: string): string | null {
  if (!key.startsWith(DOCTOR_PROBE_PREFIX) || !key.endsWith(`/${TRAIN_JSON}`)) return null;
  const id = key.slice(DOCTOR_PROBE_PREFIX.length, -`/${TRAIN_JSON}`.length);
  return PROBE_ID.test(id) ? id : null;
}

export function probeSeenKey(probeId: string): string {
  return `${DOCTOR_SEEN_PREFIX}${probeId}.json`;
}
