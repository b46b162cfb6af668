/**
 * Putting a run event on a bus exactly once, although the steps that put them are retried.
 *
 * PutEvents has no idempotency token, so each event has a marker object,
 * status/.events/<run id>/<kind>, and goes out in three steps:
 *   1. claim: write the marker `pending` with `If-None-Match: *` (only one attempt creates it);
 *   2. put the event on the bus;
 *   3. write the marker `sent`.
 * A later attempt that finds `sent` puts nothing. One that loses the claim to an attempt running
 * at the same moment waits (a few seconds at most) for that attempt's `sent`. One that finds an
 * older `pending` cannot know whether
 * the earlier attempt's PutEvents went through (it ended between 1 and 3), and puts the event
 * again rather than risk losing it: the repeat carries the same `detail.event_id`. So the event is
 * never lost (a failed put fails the step, which is retried, and in the end fails the execution,
 * which the ExecutionsFailed alarm reports), and is sent twice only when an invocation dies in
 * the instant between PutEvents and the `sent` marker. Marking first and putting after could
 * lose it silently (a crash after the mark); putting first and marking after would send it again
 * on every retry of a step that failed after the put.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { eventMarkerKey } from '../../storage/keys.js';
import { isLostRace, putJson, readJson } from '../../storage/objects.js';
import { messageOf, retryable } from '../../core/errors/errors.js';
import { eventNotPutMessage } from '../../core/errors/messages.js';
import type { RunEvent, RunEventKind } from './events.js';

/** A bus that takes Hopper's events: EventBridge in the cloud, local/emulator/event-bus.ts locally. */
export interface RunEventBus {
  /** Puts one event; resolves once the bus has accepted it, throws when it has not. */
  put(event: RunEvent): Promise<void>;
}

type MarkerState = 'pending' | 'sent';

interface Marker {
  readonly state: MarkerState;
  readonly event_id: string;
  readonly detail_type: string;
  readonly at: string;
}

export interface PublishContext {
  readonly s3: S3Client;
  readonly bucket: string;
  readonly bus: RunEventBus;
  readonly now: () => number;
  readonly warn: (message: string, extra: Record<string, unknown>) => void;
}

export type PublishResult = 'sent' | 'sent again' | 'already sent';

/** How long an attempt that lost the claim waits for the winner's `sent`, and how often it looks. */
export const CLAIM_WAIT_MS = 5_000;
const CLAIM_POLL_MS = 100;

/** Puts `event` (of `kind`) on the bus unless its marker says it went out already. */
export async function publishOnce(
  context: PublishContext,
  kind: RunEventKind,
  event: RunEvent,
): Promise<PublishResult> {
  const key = eventMarkerKey(event.detail.run_id, kind);
  const marker = (state: MarkerState): Marker => ({
    state,
    event_id: event.detail.event_id,
    detail_type: event.detailType,
    at: new Date(context.now()).toISOString(),
  });
  let found = await readMarker(context, key);
  if (found === null && !(await writeMarker(context, key, marker('pending'), true))) {
    // Another attempt claimed it between the read and the write: it is putting the event now.
    found = await waitWhilePending(context, key);
  }
  if (found === 'sent') return 'already sent';
  if (found === 'pending') {
    context.warn('an earlier attempt may have put this event already; putting it again', {
      event_id: event.detail.event_id,
    });
  }
  try {
    await context.bus.put(event);
  } catch (error) {
    const message = eventNotPutMessage(event.detailType, event.detail.run_id, messageOf(error));
    throw retryable('events_unavailable', message, error);
  }
  await writeMarker(context, key, marker('sent'), false);
  return found === 'pending' ? 'sent again' : 'sent';
}

/** The marker once it says `sent`, or as it is after CLAIM_WAIT_MS (bounded polling). */
async function waitWhilePending(context: PublishContext, key: string): Promise<MarkerState | null> {
  let found = await readMarker(context, key);
  for (let waited = 0; found === 'pending' && waited < CLAIM_WAIT_MS; waited += CLAIM_POLL_MS) {
    await new Promise((resolve) => setTimeout(resolve, CLAIM_POLL_MS));
    found = await readMarker(context, key);
  }
  return found;
}

async function readMarker(context: PublishContext, key: string): Promise<MarkerState | null> {
  const read = await readJson(context.s3, context.bucket, key);
  if (read === null) return null;
  // A marker that is not one of ours is treated as a claim: the event may have gone out.
  return (read.value as { state?: unknown } | null | undefined)?.state === 'sent' ? 'sent' : 'pending';
}

/** Writes the marker; with `onlyIfAbsent`, false when one exists already (412). */
async function writeMarker(
  context: PublishContext,
  key: string,
  marker: Marker,
  onlyIfAbsent: boolean,
): Promise<boolean> {
  try {
    await putJson(context.s3, context.bucket, key, marker, onlyIfAbsent ? { IfNoneMatch: '*' } : {});
    return true;
  } catch (error) {
    // 412: the key exists; 409 ConditionalRequestConflict: a write of the key raced this one.
    // Either way, someone else has claimed it.
    if (onlyIfAbsent && isLostRace(error, false)) return false;
    throw error;
  }
}
