/**
 * The cloud ExecutionStarter: StartExecution through the real SFN client, against local mode's
 * Step Functions endpoint (local/emulator/executions-endpoint.ts) over a LocalStateMachine, which keep
 * Step Functions' rule for a Standard workflow's name seen before: the same input while the
 * execution is open answers that execution, other input or a closed execution is
 * ExecutionAlreadyExists (https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html).
 */
import '../../local/emulator/with-resolvers.js';
import { SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { afterEach, describe, expect, it } from 'vitest';
import {
  sfnExecutionStarter,
  withExecutionArn,
  type ExecutionInput,
} from '../../lambdas/trigger/start-execution.js';
import type { AslDefinition } from '../../local/emulator/definition.js';
import { startExecutionsEndpoint } from '../../local/emulator/executions-endpoint.js';
import { LOCAL_STATE_MACHINE_ARN, LocalStateMachine } from '../../local/emulator/state-machine.js';
import { CLIENT_SETTINGS } from '../helpers/aws-json-endpoint.js';
import { whenDone } from '../helpers/local-execution.js';
import { withTimeout } from '../../testkit/timeout.js';

/** One Task, held open until the test lets it finish. */
const HOLD: AslDefinition = {
  StartAt: 'Hold',
  States: {
    Hold: { Type: 'Task', Resource: 'arn:aws:lambda:us-east-1:123456789012:function:Hold', End: true },
  },
};

interface StepFunctions {
  readonly machine: LocalStateMachine;
  readonly client: SFNClient;
  /** Lets every held execution finish. */
  release(): void;
  close(): Promise<void>;
}

async function stepFunctions(): Promise<StepFunctions> {
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  const machine = new LocalStateMachine({
    definition: HOLD,
    tasks: { Hold: () => released.then(() => ({})) },
  });
  const endpoint = await startExecutionsEndpoint(machine);
  const client = new SFNClient({ ...CLIENT_SETTINGS, endpoint: endpoint.url, maxAttempts: 1 });
  return {
    machine,
    client,
    release,
    close: async () => {
      release();
      client.destroy();
      await machine.stopAll();
      await endpoint.close();
    },
  };
}

let sfn: StepFunctions | undefined;
afterEach(async () => {
  await sfn?.close();
  sfn = undefined;
});

function input(etag: string): ExecutionInput {
  return {
    run: {
      runId: 'reviews-abc',
      bucket: 'b',
      drop: 'reviews',
      key: 'inbox/reviews/train.json',
      etag,
      startedAt: '2026-01-01T00:00:00.000Z',
    },
  };
}

describe('sfnExecutionStarter', () => {
  it('starts the execution with its name and JSON input, the execution ARN added to the run', async () => {
    sfn = await stepFunctions();
    const starter = sfnExecutionStarter(LOCAL_STATE_MACHINE_ARN, sfn.client);

    const started = await starter.start('reviews-abc', input('e'));

    expect(started).toEqual({
      outcome: 'running',
      executionArn: 'arn:aws:states:us-east-1:123456789012:execution:hopper-local:reviews-abc',
      startDate: expect.any(Date) as Date,
    });
    const execution = sfn.machine.execution('reviews-abc');
    expect(execution?.input).toEqual(withExecutionArn(input('e'), LOCAL_STATE_MACHINE_ARN, 'reviews-abc'));
    expect(execution?.input.run.executionArn).toBe(started.outcome === 'running' ? started.executionArn : '');
  });

  it('while the execution is open: the same input answers that execution, other input is already_exists', async () => {
    sfn = await stepFunctions();
    const starter = sfnExecutionStarter(LOCAL_STATE_MACHINE_ARN, sfn.client);
    const first = await starter.start('reviews-abc', input('e'));

    const again = await starter.start('reviews-abc', input('e'));
    const other = await starter.start('reviews-abc', input('another'));

    expect(again).toEqual(first);
    expect(other).toEqual({ outcome: 'already_exists' });
    expect(sfn.machine.executions()).toHaveLength(1);
  });

  it('compares the input as the request sent it: the same JSON written otherwise is other input', async () => {
    sfn = await stepFunctions();
    const start = (text: string) =>
      sfn?.client.send(
        new StartExecutionCommand({
          stateMachineArn: LOCAL_STATE_MACHINE_ARN,
          name: 'reviews-abc',
          input: text,
        }),
      );
    const text = JSON.stringify(input('e'));
    const first = await start(text);

    expect(await start(text)).toMatchObject({ executionArn: first?.executionArn });
    await expect(start(JSON.stringify(input('e'), null, 2))).rejects.toMatchObject({
      name: 'ExecutionAlreadyExists',
    });
    expect(sfn.machine.executions()).toHaveLength(1);
  });

  it('once the execution has closed: already_exists whatever the input, and nothing runs again', async () => {
    sfn = await stepFunctions();
    const starter = sfnExecutionStarter(LOCAL_STATE_MACHINE_ARN, sfn.client);
    await starter.start('reviews-abc', input('e'));
    sfn.release();
    expect(await withTimeout(whenDone(sfn.machine, 'reviews-abc'), 'reviews-abc', 5_000)).toMatchObject({
      status: 'SUCCEEDED',
    });

    expect(await starter.start('reviews-abc', input('e'))).toEqual({ outcome: 'already_exists' });
    expect(await starter.start('reviews-abc', input('another'))).toEqual({ outcome: 'already_exists' });
    expect(sfn.machine.executions()).toHaveLength(1);
  });

  it('lets any other refusal through, so the event is retried and then dead-lettered', async () => {
    sfn = await stepFunctions();
    const starter = sfnExecutionStarter(LOCAL_STATE_MACHINE_ARN, sfn.client);
    await expect(starter.start('not a name', input('e'))).rejects.toMatchObject({ name: 'InvalidName' });
    const elsewhere = sfnExecutionStarter(`${LOCAL_STATE_MACHINE_ARN}-nope`, sfn.client);
    await expect(elsewhere.start('reviews-abc', input('e'))).rejects.toMatchObject({
      name: 'StateMachineDoesNotExist',
    });
    await expect(
      sfn.client.send(
        new StartExecutionCommand({ stateMachineArn: LOCAL_STATE_MACHINE_ARN, name: 'x', input: '{' }),
      ),
    ).rejects.toMatchObject({ name: 'InvalidExecutionInput' });
    expect(sfn.machine.executions()).toHaveLength(0);
  });
});
