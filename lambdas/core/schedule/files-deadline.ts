/**
 * Waiting out a failure while a paid model's files may still be at the service: a poll of the
 * model or its copy that fails for a reason that may pass (the service unreachable or busy, S3
 * failing) is not the end of the run but one more wait, until the files could be gone. The
 * deadline is the model's files_expire_at once known, else the files' retention counted from
 * the first failure in a row; every wait ends FILES_EXPIRY_MARGIN_SECONDS before it
 * (docs/reliability.md, "Expiry edges").
 */
import { ASSUMED_FILES_RETENTION_MS } from '../../service-client/contract.js';
import { FILES_EXPIRY_MARGIN_SECONDS, nextPoll, pollCeilingSeconds } from './polling.js';
import type { PollSchedule } from '../state/state.js';

export interface FilesWaitInput {
  /** Milliseconds since the epoch. */
  readonly now: number;
  /** The schedule before (consecutive failures back off; the run's counts carry on). */
  readonly previous: PollSchedule;
  /** When the first failure in a row happened, if an earlier one did. */
  readonly failingSince: string | undefined;
  readonly filesExpireAt: string | null;
  /** The shortest retention the account's earlier models showed (seconds), or null. */
  readonly filesRetentionSeconds: number | null;
  /** A Retry-After the service asked for, honoured as far as the deadline allows. */
  readonly retryAfterMs?: number | undefined;
}

export interface FilesWait {
  readonly schedule: PollSchedule;
  /** When the first failure in a row happened. */
  readonly failingSince: string;
  /** The time the files could be gone by: the wait never goes past it. */
  readonly deadline: string;
}

/** The wait before trying again, or undefined when the files could be gone by now. */
export function waitForFiles(input: FilesWaitInput): FilesWait | undefined {
  const { now, previous, filesExpireAt, filesRetentionSeconds } = input;
  const failingSince = input.failingSince ?? new Date(now).toISOString();
  const retentionMs =
    filesRetentionSeconds === null ? ASSUMED_FILES_RETENTION_MS : filesRetentionSeconds * 1000;
  const deadline = filesExpireAt ?? new Date(Date.parse(failingSince) + retentionMs).toISOString();
  const msLeft = Date.parse(deadline) - now;
  if (!(msLeft > 0)) return undefined;
  const secondsLeft = Math.floor(msLeft / 1000);
  const schedule = nextPoll('wait', previous, {
    now,
    deadline,
    marginSeconds: FILES_EXPIRY_MARGIN_SECONDS,
    maxSeconds: pollCeilingSeconds(filesRetentionSeconds),
  });
  // A Retry-After is honoured, as far as the margin allows.
  const latest = Math.max(schedule.waitSeconds, secondsLeft - FILES_EXPIRY_MARGIN_SECONDS);
  const asked = Math.min(latest, Math.ceil((input.retryAfterMs ?? 0) / 1000));
  const extra = Math.max(0, asked - schedule.waitSeconds);
  return {
    schedule: {
      ...schedule,
      waitSeconds: schedule.waitSeconds + extra,
      totalWaitSeconds: schedule.totalWaitSeconds + extra,
    },
    failingSince,
    deadline,
  };
}
