/**
 * Which of two runs of a drop came from the later upload of its train.json. Every run of a drop
 * starts from one key (inbox/<drop>/train.json), and S3 defines its events' `sequencer` to order
 * the events of one key: hex strings of varying length, compared after left-padding to equal
 * length. EventBridge gives S3 events a time to the second only, so two uploads in one second
 * are ordered by their sequencers; the time orders runs without one (an event that carried none,
 * a status written before the field), and the run id breaks what is left, the same way everywhere.
 */

/** A run as its order needs it: the RunInput's fields, or a status file's under the same names. */
export interface RunOrderKey {
  readonly runId: string;
  readonly startedAt: string;
  /** S3's `sequencer` of the event that started the run; absent or empty when it had none. */
  readonly sequencer?: string | null | undefined;
}

/** Negative, zero or positive as sequencer `a` orders before, with or after `b` (one key's events). */
export function compareSequencers(a: string, b: string): number {
  const width = Math.max(a.length, b.length);
  const left = a.toUpperCase().padStart(width, '0');
  const right = b.toUpperCase().padStart(width, '0');
  return left < right ? -1 : left > right ? 1 : 0;
}

/** True when `a` is a later run of the drop than `b` (never for the same run). */
export function isLaterRun(a: RunOrderKey, b: RunOrderKey): boolean {
  if (a.runId === b.runId) return false;
  if (isSequencer(a.sequencer) && isSequencer(b.sequencer)) {
    const order = compareSequencers(a.sequencer, b.sequencer);
    if (order !== 0) return order > 0;
  }
  if (a.startedAt !== b.startedAt) return a.startedAt > b.startedAt;
  return a.runId > b.runId;
}

function isSequencer(value: string | null | undefined): value is string {
  return typeof value === 'string' && /^[0-9A-Fa-f]+$/.test(value);
}
