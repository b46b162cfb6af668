/**
 * Local mode's event bus: where the handlers' run events go instead of EventBridge. It keeps
 * every event it was given, shaped as EventBridge delivers them to a rule's target, and emits
 * each as `event`, which `hopper local` prints and tests read.
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { EventBridgeEvent } from 'aws-lambda';
import type { RunEventBus } from '../../lambdas/records/events/index.js';
import {
  DEFAULT_EVENT_SOURCE,
  type RunEvent,
  type RunEventDetail,
} from '../../lambdas/records/events/index.js';

/** An event as a rule's target receives it from EventBridge. */
export type DeliveredRunEvent = EventBridgeEvent<RunEvent['detailType'], RunEventDetail>;

export interface LocalEventBusEvents {
  event: [event: DeliveredRunEvent];
}

/** The account and region local mode pretends to be in (as its state machine's ARN). */
const LOCAL_ACCOUNT = '123456789012';
const LOCAL_REGION = 'us-east-1';

export class LocalEventBus extends EventEmitter<LocalEventBusEvents> implements RunEventBus {
  readonly #delivered: DeliveredRunEvent[] = [];

  put(event: RunEvent): Promise<void> {
    const delivered: DeliveredRunEvent = {
      version: '0',
      id: randomUUID(),
      'detail-type': event.detailType,
      source: DEFAULT_EVENT_SOURCE,
      account: LOCAL_ACCOUNT,
      time: new Date().toISOString(),
      region: LOCAL_REGION,
      resources: event.detail.execution_arn === null ? [] : [event.detail.execution_arn],
      // A copy, as a bus serialises it: later changes to the caller's object do not show here.
      detail: structuredClone(event.detail),
    };
    this.#delivered.push(delivered);
    this.emit('event', delivered);
    return Promise.resolve();
  }

  /** Every event put so far, oldest first. */
  events(): readonly DeliveredRunEvent[] {
    return [...this.#delivered];
  }
}

/** One line for a person: which event, of which run, and how it ended. */
export function formatRunEvent(event: DeliveredRunEvent): string {
  const { detail } = event;
  const outcome =
    detail.error !== null ? `: ${detail.error.code}` : detail.model !== null ? `: ${detail.model.onnx}` : '';
  return `event ${event.source} "${event['detail-type']}" (run ${detail.run_id})${outcome}`;
}
