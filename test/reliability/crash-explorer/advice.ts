/**
 * The advice Hopper gives a drop, followed as a user would: `hopper retry <drop>`, or train.json
 * (or the whole folder) uploaded again; with no status at all, train.json uploaded again. The
 * same for local mode in this process and for a `hopper local` child process (AdviceDriver).
 */
import type { RunStatus } from '../../../lambdas/records/status/index.js';
import { TRAIN_JSON } from '../../../lambdas/storage/keys.js';

/** How the advice is carried out against one local mode. */
export interface AdviceDriver {
  /** `hopper retry <drop>`: its exit code and what it printed. */
  retry(): Promise<{ code: number; output: string }>;
  /** Puts these files of the drop (train.json last). */
  upload(files: Readonly<Record<string, string>>): Promise<void>;
  /**
   * Runs `act`, then waits (bounded) for the run it starts to end: undefined when it did, else
   * what went wrong ("started no run", "did not end within 30 s").
   */
  runStartedBy(act: () => Promise<void>): Promise<string | undefined>;
  /** The drop's status now. */
  status(): Promise<RunStatus | null>;
}

/** Rounds of advice followed, at most: the advice after a kill, then after that run. */
const ADVICE_ROUNDS = 2;

/**
 * Follows the advice of `status` until the drop succeeds (at most ADVICE_ROUNDS times); what does
 * not work is a violation, one line each.
 */
export async function followAdvice(
  driver: AdviceDriver,
  drop: { readonly name: string; readonly files: Readonly<Record<string, string>> },
  status: RunStatus | null,
): Promise<string[]> {
  let current = status;
  const followed: string[] = [];
  for (let round = 0; round < ADVICE_ROUNDS; round += 1) {
    if (current?.state === 'succeeded') return [];
    const message = current?.error?.message ?? '';
    const retries = current !== null && message.includes(`hopper retry ${drop.name}`);
    let refused: string | undefined;
    const act = adviceAct(driver, drop, current, retries, (why) => (refused = why));
    const after = followed.length === 0 ? '' : ` (after ${followed.join(', then ')})`;
    if (act === undefined) {
      return [
        `advice: the ${String(current?.state)} status${after} gives no advice to follow: ${message.slice(0, 200)}`,
      ];
    }
    const advice = retries ? `hopper retry ${drop.name}` : 'upload train.json again';
    const failed = await driver.runStartedBy(act);
    if (refused !== undefined) return [`${refused}${after}`];
    if (failed !== undefined) return [`advice: the run "${advice}"${after} started ${failed}`];
    followed.push(advice);
    current = await driver.status();
  }
  return [];
}

/** What following the status's advice does, or undefined when it gives none. */
function adviceAct(
  driver: AdviceDriver,
  drop: { readonly name: string; readonly files: Readonly<Record<string, string>> },
  status: RunStatus | null,
  retries: boolean,
  refuse: (why: string) => void,
): (() => Promise<void>) | undefined {
  const message = status?.error?.message ?? '';
  if (retries) {
    return async () => {
      const retry = await driver.retry();
      if (retry.code !== 0) {
        refuse(
          `advice: "hopper retry ${drop.name}" refused (exit ${String(retry.code)}): ${retry.output.trim().slice(0, 200)}`,
        );
      }
    };
  }
  if (status === null || /upload (it|train\.json) again|drop train\.json again/i.test(message)) {
    return () => driver.upload({ [TRAIN_JSON]: drop.files[TRAIN_JSON] ?? '' });
  }
  if (/drop the folder again/i.test(message)) return () => driver.upload(drop.files);
  return undefined;
}
