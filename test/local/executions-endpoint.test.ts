/**
 * Local mode's stand-in for Step Functions' ListExecutions and DescribeExecution, through the
 * real SFNClient: executions newest first, paged with nextToken, filtered by status; a failed
 * run's error and cause; Step Functions' error names for what does not exist.
 */
import {
  DescribeExecutionCommand,
  ExecutionDoesNotExist,
  ListExecutionsCommand,
  SFNClient,
  StateMachineDoesNotExist,
} from '@aws-sdk/client-sfn';
import { afterEach, describe, expect, it } from 'vitest';
import { TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { CLIENT_SETTINGS } from '../helpers/aws-json-endpoint.js';
import { dropAndRun, useLocalMode } from '../helpers/local-mode.js';

const fixture = useLocalMode();
let sfn: SFNClient | undefined;
afterEach(() => {
  sfn?.destroy();
});

describe("local mode's executions endpoint", () => {
  it('lists the runs newest first, a page at a time, and describes each', async () => {
    const local = await fixture.start({ simulated: { heldOutCount: 0, credits: 1 } });
    const data = { 'reviews.csv': 'id,text\nr1,good\nr2,bad\n' };
    const first = await dropAndRun(local, 'first', { ...data, [TRAIN_JSON]: '{}' });
    const second = await dropAndRun(local, 'second', { ...data, [TRAIN_JSON]: '{}' });
    expect([first.outcome.status, second.outcome.status]).toEqual(['SUCCEEDED', 'FAILED']);

    sfn = new SFNClient({ ...CLIENT_SETTINGS, endpoint: local.executions.url });
    const stateMachineArn = local.executions.stateMachineArn;
    const page1 = await sfn.send(new ListExecutionsCommand({ stateMachineArn, maxResults: 1 }));
    expect(page1.executions?.map((execution) => execution.name)).toEqual([second.execution.name]);
    expect(page1.nextToken).toEqual(expect.any(String));
    const page2 = await sfn.send(
      new ListExecutionsCommand({ stateMachineArn, maxResults: 1, nextToken: page1.nextToken }),
    );
    expect(page2.executions?.map((execution) => [execution.name, execution.status])).toEqual([
      [first.execution.name, 'SUCCEEDED'],
    ]);
    expect(page2.nextToken).toBeUndefined();
    const failed = await sfn.send(new ListExecutionsCommand({ stateMachineArn, statusFilter: 'FAILED' }));
    expect(failed.executions?.map((execution) => execution.name)).toEqual([second.execution.name]);

    const arn = page1.executions?.[0]?.executionArn;
    const described = await sfn.send(new DescribeExecutionCommand({ executionArn: arn }));
    expect(described).toMatchObject({ status: 'FAILED', error: 'no_credits' });
    expect(described.cause).toMatch(/no credits left/);
    expect(JSON.parse(described.input ?? '')).toMatchObject({ run: { drop: 'second' } });
    expect(described.stopDate?.getTime()).toBeGreaterThanOrEqual(described.startDate?.getTime() ?? Infinity);

    await expect(
      sfn.send(new DescribeExecutionCommand({ executionArn: `${String(arn)}-nope` })),
    ).rejects.toBeInstanceOf(ExecutionDoesNotExist);
    await expect(
      sfn.send(new ListExecutionsCommand({ stateMachineArn: `${stateMachineArn}-nope` })),
    ).rejects.toBeInstanceOf(StateMachineDoesNotExist);
  });
});
