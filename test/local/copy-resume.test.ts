/**
 * CopyModel going on across invocations, end to end: local mode with the synthesized state
 * machine, the real handler bundles, the local S3 and the simulated service over HTTP. CopyModel's
 * Lambda timeout (30 s) is under its time box's margin (TIME_BOX.marginMs, 60 s), so every
 * invocation copies the one part it must and leaves the upload open in `$.copy.upload`; a model of
 * three parts then takes three invocations, each going on from the parts S3 holds (ListParts) and
 * fetching the rest from the service with Range.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import type { CopyWaitSlot } from '../../lambdas/core/state/index.js';
import { DEFAULT_PART_BYTES } from '../../lambdas/storage/multipart.js';
import { modelBytesAt } from '../../local/service/index.js';
import { dropAndRun, modelObjects, statesEntered, useLocalMode, wrapOnly } from '../helpers/local-mode.js';
import { reviewsDrop } from '../helpers/fixtures.js';

const fixture = useLocalMode();

/** The names of the commands `client` sends, in order. */
function commandsOf(client: S3Client): string[] {
  const sent: string[] = [];
  client.middlewareStack.add(
    (next, context) => (args) => {
      sent.push(String(context.commandName));
      return next(args);
    },
    { step: 'initialize', name: 'recordCommandsForTest' },
  );
  return sent;
}

describe('CopyModel across invocations, through the state machine', () => {
  it('a model of three parts is copied by three invocations, byte for byte, and the run succeeds', async () => {
    const modelBytes = 2 * DEFAULT_PART_BYTES + 12_345;
    const results: unknown[] = [];
    const local = await fixture.start({
      lambdaTimeoutSeconds: { CopyModel: 30 },
      simulated: { modelBytes },
      wrapTask: wrapOnly('CopyModel', (lambda) => async (input) => {
        const result = await lambda(input);
        results.push(result);
        return result;
      }),
    });
    const s3 = local.functionS3('CopyModel');
    if (s3 === undefined) throw new Error('no S3 client for CopyModel');
    const sent = commandsOf(s3);
    const run = await dropAndRun(local, 'copy-resume', reviewsDrop(), 60_000);

    expect(run.outcome.status).toBe('SUCCEEDED');
    expect(run.status).toMatchObject({ state: 'succeeded', error: null });
    expect(statesEntered(run.events).filter((state) => state === 'CopyModel')).toHaveLength(3);
    // The first two stopped at their time box with the upload open; the third completed it.
    const [first, second, third] = results as [CopyWaitSlot, CopyWaitSlot, { bytes: number }];
    expect(first.upload?.uploadId).toMatch(/\S/);
    expect(second.upload).toEqual(first.upload);
    expect(first.waitSeconds).toBe(0);
    expect(third).toMatchObject({ bytes: modelBytes });
    expect(sent.filter((name) => name === 'CreateMultipartUploadCommand')).toHaveLength(1);
    expect(sent.filter((name) => name === 'UploadPartCommand')).toHaveLength(3);
    expect(sent.filter((name) => name === 'ListPartsCommand')).toHaveLength(2);
    expect(sent.filter((name) => name === 'CompleteMultipartUploadCommand')).toHaveLength(1);

    const modelId = run.status?.model_id ?? '';
    const objects = await modelObjects(local, 'copy-resume');
    expect([...objects.keys()].sort()).toEqual([`${modelId}/model.json`, `${modelId}/model.onnx`]);
    expect(objects.get(`${modelId}/model.onnx`)?.equals(modelBytesAt(modelId, 0, modelBytes))).toBe(true);
    expect(local.simulated?.credits()).toBe(9);
  });
});
