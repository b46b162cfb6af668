/**
 * The time box of steps that work in batches (UploadFiles, LabelExamples), so no invocation
 * nears Lambda's 15 minutes: a batch takes no new work with less than MARGIN_MS left (finishing
 * the item, the status write and returning need time too), nor after BATCH_MS. The state machine
 * then sends the run back for another batch.
 */
export const TIME_BOX = { marginMs: 60_000, batchMs: 10 * 60_000 } as const;
