/**
 * The run error codes, each marked with whether a resume can get past it: plain data that the run
 * state and the vocabulary name, apart from RunError and its words (errors.ts, messages.ts).
 */
/**
 * Every run error code, marked with whether a resumed run can get past it (lambdas/ownership/
 * resume.ts; docs/errors.md, "Resuming a failed run"): `resumable` for the stops and the
 * service's and Hopper's own failures, its dataset taken as the service holds it; `fails_again`
 * for an error from the drop, the labels or a dataset the service refused, which a resume would
 * meet again.
 */
const RUN_ERRORS = {
  // The drop (validate step)
  invalid_event: 'fails_again',
  invalid_train_json: 'fails_again',
  missing_file: 'fails_again',
  nested_files: 'fails_again',
  invalid_file_name: 'fails_again',
  too_many_files: 'fails_again',
  empty_file: 'fails_again',
  no_data_files: 'fails_again',
  invalid_labels_file: 'fails_again',
  drop_changed: 'fails_again',
  files_still_arriving: 'fails_again',
  not_resumable: 'fails_again',
  // The service's verdicts
  dataset_unreadable: 'fails_again',
  dataset_expired: 'fails_again',
  dataset_gone: 'fails_again',
  invalid_decision: 'fails_again',
  labels_required: 'fails_again',
  label_missing: 'fails_again',
  label_ambiguous: 'fails_again',
  invalid_label: 'fails_again',
  unknown_encoder: 'resumable',
  no_credits: 'resumable',
  training_failed: 'resumable',
  model_files_gone: 'resumable',
  model_gone: 'resumable',
  model_size_mismatch: 'resumable',
  unsupported_next_action: 'fails_again',
  // The service as a whole
  unauthorized: 'resumable',
  service_unavailable: 'resumable',
  service_busy: 'resumable',
  service_error: 'resumable',
  unexpected_response: 'resumable',
  wait_limit: 'resumable',
  history_limit: 'resumable',
  // Hopper itself
  step_timeout: 'resumable',
  storage_error: 'resumable',
  events_unavailable: 'fails_again',
  internal_error: 'resumable',
  // The deploy's credit budget is used up (lambdas/ownership/credit-ledger.ts)
  credit_budget: 'resumable',
  // A newer train.json of the same drop took over (not a failure: the run gave way)
  superseded: 'fails_again',
  training_in_progress: 'resumable',
  // Local mode
  interrupted: 'resumable',
  // A local drop folder, refused before any upload (hopper run)
  linked_files: 'fails_again',
  // A name that gives a key over S3's limit: refused before anything is sent (validate step)
  name_too_long: 'fails_again',
} as const satisfies Record<string, 'resumable' | 'fails_again'>;

export type RunErrorCode = keyof typeof RUN_ERRORS;

export const RUN_ERROR_CODES = Object.keys(RUN_ERRORS) as readonly RunErrorCode[];

export function isRunErrorCode(value: string): value is RunErrorCode {
  return Object.hasOwn(RUN_ERRORS, value);
}

/** Whether a resumed run can get past a run that failed with `code` (RUN_ERRORS). */
export function resumableAfter(code: RunErrorCode): boolean {
  return RUN_ERRORS[code] === 'resumable';
}
