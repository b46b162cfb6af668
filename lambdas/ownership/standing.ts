/**
 * A run's standing towards its drop: the drop's ownership as a small state machine, decided
 * once per invocation from the drop's status as the invocation read it (runtime/handler.ts's
 * findRun), and after a final failure from the status read again. Pure.
 *
 *   owner ──a newer train.json──▶ finishing ──its training failed, credit back──▶ giving-way
 *     └────a newer train.json, nothing paid──────────────────────────────────────▶ giving-way
 *
 * - owner: the newest train.json's run; it may create and pay.
 * - finishing: a newer run took over while this run held a paid model; it finishes that model
 *   (polls it, copies it, reports), pays for nothing more, and promotes nothing (lineage.ts).
 * - giving-way: a newer run took over and this run holds nothing paid; it stops before its step
 *   (`superseded`), but for the steps that decide for themselves (start_training may find a
 *   training of its own to adopt; the report ends the run).
 */
import { holdsPaidModel } from '../core/state/paid-model.js';
import type { RunState } from '../core/state/state.js';
import { isNewerRun, type RunStatus } from '../records/status/status.js';
import { newerRunOf, type NewerRun } from './supersede.js';

export type Standing =
  { readonly kind: 'owner' } | { readonly kind: 'finishing' | 'giving-way'; readonly newer: NewerRun };

const OWNER: Standing = { kind: 'owner' };

/** Where `state`'s run stands, by the drop's status file (null: none yet). */
export function standingOf(
  status: Pick<RunStatus, 'run_id' | 'started_at' | 'sequencer'> | null,
  state: RunState,
): Standing {
  if (status === null || !isNewerRun(status, state.run)) return OWNER;
  return { kind: holdsPaidModel(state) ? 'finishing' : 'giving-way', newer: newerRunOf(status) };
}

/** The newer run that took the drop over, or null while the run owns it. */
export function takenOverBy(standing: Standing): NewerRun | null {
  return standing.kind === 'owner' ? null : standing.newer;
}
