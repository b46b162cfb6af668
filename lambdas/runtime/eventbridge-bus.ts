/**
 * The cloud's run event bus: PutEvents on the account's default EventBridge bus, with the
 * stack's event source (HOPPER_EVENT_SOURCE; docs/operations.md).
 */
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { ENV, optionalEnv } from './environment.js';
import type { RunEventBus } from '../records/events/event-bus.js';
import { DEFAULT_EVENT_SOURCE } from '../records/events/events.js';

export function eventBridgeBus(
  source: string,
  client: EventBridgeClient = new EventBridgeClient({}),
): RunEventBus {
  return {
    async put(event) {
      const answer = await client.send(
        new PutEventsCommand({
          Entries: [
            {
              Source: source,
              DetailType: event.detailType,
              Detail: JSON.stringify(event.detail),
              // The execution, so the console links the event to it; none for a run without one.
              Resources: event.detail.execution_arn === null ? [] : [event.detail.execution_arn],
            },
          ],
        }),
      );
      // PutEvents answers 200 with a per-entry error when an entry was refused.
      const refused = answer.Entries?.find((entry) => entry.ErrorCode !== undefined);
      if ((answer.FailedEntryCount ?? 0) > 0 || refused !== undefined) {
        throw new Error(
          `EventBridge refused the event: ${refused?.ErrorCode ?? 'no code'} ${refused?.ErrorMessage ?? ''}`.trim(),
        );
      }
    },
  };
}

/**
 * The bus of a Lambda container: the source the stack set (default DEFAULT_EVENT_SOURCE), the
 * client created at the first event.
 */
export function eventBridgeFromEnvironment(env: NodeJS.ProcessEnv): RunEventBus {
  const source = optionalEnv(env, ENV.eventSource) ?? DEFAULT_EVENT_SOURCE;
  let bus: RunEventBus | undefined;
  return {
    async put(event) {
      bus ??= eventBridgeBus(source);
      await bus.put(event);
    },
  };
}
