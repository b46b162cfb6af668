/**
 * The trigger: S3's EventBridge "Object Created" event for inbox/<drop>/train.json starts one
 * execution of the state machine. The execution name is derived from bucket, key and etag, so
 * a repeated event (EventBridge delivers at least once) starts nothing new, by Step Functions'
 * own rule for a Standard workflow's StartExecution of a name it has seen (kept 90 days):
 * - the execution is open and the input is the same (a repeated event carries the event's time,
 *   so its input is): success, answering the open execution's ARN and start date;
 * - the execution is open and the input differs, or it has closed, whatever the input:
 *   ExecutionAlreadyExists.
 * Starting goes through ExecutionStarter: Step Functions in the cloud (sfnExecutionStarter), the
 * local interpreter in local mode (local/emulator/state-machine.ts), both under that rule.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import type { S3Client } from '@aws-sdk/client-s3';
import { StartExecutionCommand, type SFNClient } from '@aws-sdk/client-sfn';
import type { EventBridgeEvent, S3ObjectCreatedNotificationEventDetail } from 'aws-lambda';
import * as z from 'zod';
import { RunError, messageOf, notObjectCreatedMessage } from '../core/errors/index.js';
import { ENV, requireEnv } from '../runtime/index.js';
import { executionArnOf, executionName, type RunInput } from '../core/state/index.js';
import { statusOf, writeFirstStatus } from '../records/status/index.js';
import { dropOfTrainJsonKey, probeOfKey, probeSeenKey } from '../storage/keys.js';
import { bareEtag, putJson } from '../storage/objects.js';

export type S3ObjectCreatedEvent = EventBridgeEvent<'Object Created', S3ObjectCreatedNotificationEventDetail>;

/** The part of S3's event the trigger reads (a whole S3ObjectCreatedEvent is one). */
const TriggerEventSchema = z.object({
  source: z.string(),
  'detail-type': z.string(),
  /** When S3 created the object (ISO 8601). */
  time: z.string().optional(),
  detail: z.object({
    bucket: z.object({ name: z.string().min(1) }),
    object: z.object({
      key: z.string().min(1),
      etag: z.string().min(1),
      /** Present on versioned buckets. */
      'version-id': z.string().optional(),
      /** Orders the events of one key (hex; lambdas/core/state/run-order.ts); empty in older local events. */
      sequencer: z.string().optional(),
    }),
  }),
});
export type TriggerEvent = z.infer<typeof TriggerEventSchema>;

/** The execution's input. */
export interface ExecutionInput {
  readonly run: RunInput;
}

/**
 * StartExecution's outcome. `running`: an execution of that name and input is open, started by
 * this call or by an earlier one with the same input (Step Functions answers both alike, with
 * the open execution's ARN and start date). `already_exists`: ExecutionAlreadyExists, nothing
 * started (the name's execution has other input, or has closed).
 */
export type StartOutcome =
  | { readonly outcome: 'running'; readonly executionArn: string; readonly startDate: Date }
  | { readonly outcome: 'already_exists' };

export interface ExecutionStarter {
  /**
   * StartExecution of `name`, under Step Functions' rule for a name already used (above). The
   * execution's input is `input` with the execution's ARN added as `run.executionArn`
   * (withExecutionArn), which the run's events carry.
   */
  start(name: string, input: ExecutionInput): Promise<StartOutcome>;
}

/** The error name Step Functions gives a start refused under the rule above. */
export const EXECUTION_ALREADY_EXISTS = 'ExecutionAlreadyExists';

/** An execution as StartExecution's rule looks at it. */
export interface KnownExecution {
  readonly executionArn: string;
  readonly startDate: Date;
  /** Its input as it was started: StartExecution compares the JSON text. */
  readonly inputText: string;
  readonly open: boolean;
}

/**
 * The rule itself: StartExecution of a name whose execution is `existing`, with `inputText`.
 * Local mode and the tests' stand-ins answer by it; Step Functions answers so itself.
 */
export function repeatedStartOutcome(existing: KnownExecution, inputText: string): StartOutcome {
  return existing.open && existing.inputText === inputText
    ? { outcome: 'running', executionArn: existing.executionArn, startDate: existing.startDate }
    : { outcome: 'already_exists' };
}

export type TriggerResult =
  | { readonly started: true; readonly runId: string }
  | { readonly started: false; readonly reason: string; readonly runId?: string };

/**
 * The run an event starts, or null when its key is not inbox/<drop>/train.json. The run starts
 * when train.json arrived (the event's time) and carries the event's `sequencer`: a late
 * delivery of an older upload then stays older than the run of a newer one, even within one
 * second (run-order.ts), which keeps the status file (lambdas/records/status/status.ts).
 */
export function runInputFromEvent(event: TriggerEvent, now: number): RunInput | null {
  const bucket = event.detail.bucket.name;
  const { key, etag } = event.detail.object;
  const drop = dropOfTrainJsonKey(key);
  if (drop === null) return null;
  const eventTime = event.time === undefined ? Number.NaN : Date.parse(event.time);
  const sequencer = event.detail.object.sequencer ?? '';
  return {
    runId: executionName(bucket, key, etag, event.detail.object['version-id'] ?? ''),
    bucket,
    drop,
    key,
    etag: bareEtag(etag),
    startedAt: new Date(Number.isNaN(eventTime) ? now : eventTime).toISOString(),
    ...(sequencer === '' ? {} : { sequencer }),
  };
}

export interface TriggerOptions {
  /** Milliseconds since the epoch (the run's startedAt). Default Date.now. */
  readonly now?: () => number;
  readonly logger?: Logger;
  /** Where the trigger writes a run's first status and records `hopper doctor`'s probes. */
  readonly s3: S3Client;
}

/** What the trigger writes when it sees a `hopper doctor` probe: status/.doctor/<probe id>.json. */
export interface ProbeSeen {
  readonly probe_id: string;
  readonly key: string;
  readonly etag: string;
  /** When S3 created the probe, as the event says (null when it says not). */
  readonly event_time: string | null;
  readonly seen_at: string;
  /** Always false: a probe starts no run. */
  readonly run_started: false;
}

/**
 * A probe of `hopper doctor` (inbox/.hopper-doctor/<probe id>/train.json) reached the trigger:
 * recorded beside the statuses, for the doctor to find, and no execution started.
 */
async function recordProbe(
  { s3, logger }: { readonly s3: S3Client; readonly logger: Logger },
  event: TriggerEvent,
  probeId: string,
  now: number,
): Promise<TriggerResult> {
  const { bucket, object } = event.detail;
  const seen: ProbeSeen = {
    probe_id: probeId,
    key: object.key,
    etag: bareEtag(object.etag),
    event_time: event.time ?? null,
    seen_at: new Date(now).toISOString(),
    run_started: false,
  };
  await putJson(s3, bucket.name, probeSeenKey(probeId), seen);
  const reason = `probe: hopper doctor's probe ${probeId} seen and recorded, no run started`;
  logger.info(reason, { bucket: bucket.name, key: object.key });
  return { started: false, reason };
}

/**
 * Writes the run's first status before its start: the run shows at once, and a run cut off before
 * its first step ends is found. An aid, not a condition of the run: should the write not go
 * through (other runs of the drop writing the file faster than it can, S3 out of reach), the run
 * starts all the same and its first step writes the status. Failing the start for it would lose
 * the run wherever the event is not delivered again (local mode) and delay it where it is.
 */
async function showRun(s3: S3Client, run: RunInput, now: number, logger: Logger): Promise<void> {
  const status = statusOf({ run }, { hopperStep: 'validate_drop' }, now);
  await writeFirstStatus(s3, run.bucket, status).catch((error: unknown) => {
    logger.warn("the run's first status was not written; its first step writes it", {
      run_id: run.runId,
      drop: run.drop,
      error: messageOf(error),
    });
  });
}

/**
 * The trigger's handler over `starter`. It writes the run's first status (writeFirstStatus), then
 * starts the execution: in Lambda, a start that fails is retried by the event's delivery, and
 * the status is not written again. A `hopper doctor` probe is recorded (recordProbe) and
 * starts nothing; events for other keys are ignored (logged, not failed: the rule's wildcard also
 * matches deeper keys). An event that is not S3's at all is an error,
 * so it lands in the dead-letter queue where someone can look at it.
 */
export function createTriggerHandler(
  starter: ExecutionStarter,
  options: TriggerOptions,
): (event: unknown) => Promise<TriggerResult> {
  const now = options.now ?? Date.now;
  const logger = options.logger ?? new Logger({ serviceName: 'hopper' });
  return async (event) => {
    const parsed = TriggerEventSchema.safeParse(event);
    if (!parsed.success) {
      throw new RunError('invalid_event', notObjectCreatedMessage(z.prettifyError(parsed.error)));
    }
    const { source, detail } = parsed.data;
    const { key } = detail.object;
    if (source !== 'aws.s3' || parsed.data['detail-type'] !== 'Object Created') {
      const reason = `ignored: ${source} ${parsed.data['detail-type']} is not S3's Object Created`;
      logger.info(reason, { key });
      return { started: false, reason };
    }
    const probe = probeOfKey(key);
    if (probe !== null) return await recordProbe({ s3: options.s3, logger }, parsed.data, probe, now());
    const run = runInputFromEvent(parsed.data, now());
    if (run === null) {
      const reason = `ignored: ${key} is not inbox/<drop>/train.json`;
      logger.info(reason, { bucket: detail.bucket.name, key });
      return { started: false, reason };
    }
    await showRun(options.s3, run, now(), logger);
    const started = await starter.start(run.runId, { run });
    if (started.outcome === 'already_exists') {
      const reason = `duplicate: an execution named ${run.runId} has ended or has other input (${EXECUTION_ALREADY_EXISTS}; a repeated event)`;
      logger.info(reason, { run_id: run.runId, drop: run.drop });
      return { started: false, reason, runId: run.runId };
    }
    // Also the answer to a repeated event while the run is open: the same execution, not a new one.
    logger.info('run started or running', {
      run_id: run.runId,
      drop: run.drop,
      key,
      execution_arn: started.executionArn,
      execution_started_at: started.startDate.toISOString(),
    });
    return { started: true, runId: run.runId };
  };
}

/** `input` with its run's execution ARN (a Task Lambda cannot look it up itself). */
export function withExecutionArn(
  input: ExecutionInput,
  stateMachineArn: string,
  name: string,
): ExecutionInput {
  return { ...input, run: { ...input.run, executionArn: executionArnOf(stateMachineArn, name) } };
}

/** Step Functions' StartExecution; ExecutionAlreadyExists is an outcome, any other refusal an error. */
export function sfnExecutionStarter(stateMachineArn: string, sfn: SFNClient): ExecutionStarter {
  return {
    async start(name, input) {
      try {
        const withArn = withExecutionArn(input, stateMachineArn, name);
        const answer = await sfn.send(
          new StartExecutionCommand({ stateMachineArn, name, input: JSON.stringify(withArn) }),
        );
        return {
          outcome: 'running',
          executionArn: answer.executionArn ?? executionArnOf(stateMachineArn, name),
          startDate: answer.startDate ?? new Date(),
        };
      } catch (error) {
        if (error instanceof Error && error.name === EXECUTION_ALREADY_EXISTS)
          return { outcome: 'already_exists' };
        throw error;
      }
    },
  };
}

/**
 * The starter of a Lambda container: the state machine from ENV.stateMachineArn, read at first use.
 * @param sfn the Step Functions client (the handler passes one traced with X-Ray)
 */
export function sfnStarterFromEnvironment(sfn: SFNClient): ExecutionStarter {
  let starter: ExecutionStarter | undefined;
  return {
    async start(name, input) {
      starter ??= sfnExecutionStarter(requireEnv(process.env, ENV.stateMachineArn), sfn);
      return await starter.start(name, input);
    },
  };
}
