/**
 * `hopper run`'s <out>/<drop>/ folder, made ready before the run starts: a run pays for its
 * model, so a folder the model could not go to is refused while refusing costs nothing. The
 * folder is created, model.onnx and model.json in it must be replaceable files, and a lock file
 * is written in it with the 'wx' flag: only a write shows that one can (permissions, read-only
 * mounts, a full disk), and the lock keeps a second `hopper run` from writing the same model files
 * at the same time (model.onnx of one model beside model.json of another). A lock whose process
 * has ended is taken over.
 *
 * After the run, the model the run copied into the local bucket is copied once more into that
 * folder (copyModelOut). Each file streams to a temporary name of its own and is renamed into
 * place, and model.json goes last: a folder with model.json in it holds a whole model.
 */
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readFile, rename, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout } from 'node:timers/promises';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { messageOf } from '../../lambdas/core/errors/index.js';
import type { CopySlot } from '../../lambdas/core/state/index.js';
import * as z from 'zod';
import { CliUsageError } from './command.js';

/** The files of a model in <out>/<drop>/, in the order they are written. */
export const MODEL_FILES = ['model.onnx', 'model.json'] as const;

/** The lock's name in <out>/<drop>/. */
export const OUT_LOCK_FILE = '.hopper-run.lock';

/** Why <out>/<drop>/ cannot take the model (exit 2); the message names the path and what to do. */
export class OutFolderError extends CliUsageError {
  override readonly name: string = 'OutFolderError';
}

export interface OutFolder {
  /** <out>/<drop> */
  readonly path: string;
  /**
   * Removes the lock (if it is still this run's), then the folders made for the run if nothing
   * was saved in them.
   */
  release(): Promise<void>;
}

/** What a lock file holds: who holds it, and a token no other holder shares. */
const LockHolderSchema = z.object({ pid: z.number(), host: z.string(), token: z.string() });
type LockHolder = z.infer<typeof LockHolderSchema>;

/** Attempts at taking the lock, each after removing a stale one or waiting for another run to. */
const LOCK_ATTEMPTS = 50;
/** The pause while another run takes over a stale lock. */
const TAKEOVER_RETRY_MS = 10;
/** A takeover lock older than this was left by a process that died taking over. */
const STALE_TAKEOVER_MS = 10_000;

/**
 * Creates <out>/<drop>/, checks it can take model.onnx and model.json, and locks it for this
 * process.
 * @throws OutFolderError naming the path and what to do
 */
export async function prepareOutFolder(out: string, drop: string): Promise<OutFolder> {
  const path = join(out, drop);
  const created = await mkdir(path, { recursive: true }).catch((error: unknown) => cannotCreate(path, error));
  let lock: { release(): Promise<void> };
  try {
    for (const name of MODEL_FILES) {
      const file = join(path, name);
      if ((await stat(file).catch(() => null))?.isFile() === false) {
        throw new OutFolderError(
          `--out: ${file} is a folder, and hopper run saves the model as that file: move it away, or give another --out`,
        );
      }
    }
    lock = await takeLock(path);
  } catch (error) {
    await removeEmptyFolders(path, created);
    throw error;
  }
  return {
    path,
    async release() {
      await lock.release();
      await removeEmptyFolders(path, created);
    },
  };
}

/** Why `path` could not be made. */
async function cannotCreate(path: string, error: unknown): Promise<never> {
  const code = (error as NodeJS.ErrnoException).code;
  const file = code === 'EEXIST' || code === 'ENOTDIR' ? await firstFileOnTheWay(path) : undefined;
  if (file !== undefined) {
    throw new OutFolderError(
      `--out: ${file} is a file, and hopper run saves the model in the folder ${path}: give another --out, or move the file away`,
    );
  }
  throw new OutFolderError(
    `--out: cannot create ${path} (${describeFsError(error)}): give --out a folder you can write to`,
  );
}

/** The first path from `path`'s root down that exists and is not a folder. */
async function firstFileOnTheWay(path: string): Promise<string | undefined> {
  const parts = path.split(sep);
  for (let depth = 1; depth <= parts.length; depth++) {
    const prefix = parts.slice(0, depth).join(sep);
    if (prefix === '') continue;
    const info = await stat(prefix).catch(() => null);
    if (info === null) return undefined;
    if (!info.isDirectory()) return prefix;
  }
  return undefined;
}

/** A file system error as a person reads it: "permission denied", "no space left on device". */
function describeFsError(error: unknown): string {
  const reasons: Record<string, string> = {
    EACCES: 'permission denied',
    EPERM: 'permission denied',
    EROFS: 'a read-only file system',
    ENOSPC: 'no space left on device',
    EDQUOT: 'disk quota exceeded',
    ENOTDIR: 'a file is in the way',
    EEXIST: 'a file is in the way',
  };
  return reasons[(error as NodeJS.ErrnoException).code ?? ''] ?? messageOf(error);
}

/** Removes `path` and its parents up to `created` (the first folder mkdir made) while they are empty. */
async function removeEmptyFolders(path: string, created: string | undefined): Promise<void> {
  if (created === undefined) return;
  const depth = relative(created, path).split(sep).filter(Boolean).length;
  let folder = path;
  try {
    for (let level = 0; level <= depth; level++) {
      await rmdir(folder);
      folder = dirname(folder);
    }
  } catch {
    // Not empty (a model was saved in it): it and its parents stay.
  }
}

async function takeLock(folder: string): Promise<{ release(): Promise<void> }> {
  const lockPath = join(folder, OUT_LOCK_FILE);
  const mine: LockHolder = { pid: process.pid, host: hostname(), token: randomUUID() };
  const text = `${JSON.stringify(mine)}\n`;
  for (let attempt = 0; attempt < LOCK_ATTEMPTS; attempt++) {
    try {
      await writeFile(lockPath, text, { flag: 'wx' });
      return {
        // A lock someone removed and retook (they judged it stale) is theirs to remove.
        release: () => removeIfHolding(lockPath, text),
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
        // The lock is the first file written: this is the folder's writability check.
        await rm(lockPath, { force: true }).catch(() => undefined);
        throw new OutFolderError(
          `--out: cannot write in ${folder} (${describeFsError(error)}): give --out a folder you can write to`,
        );
      }
    }
    const held = await readFile(lockPath, 'utf8').catch(() => null);
    if (held === null) continue; // released in between: try again
    const holder = parseHolder(held);
    if (holder === null || isAlive(holder)) throw busy(folder, lockPath, holder);
    await removeStaleLock(lockPath, held);
  }
  throw busy(folder, lockPath, null);
}

function busy(folder: string, lockPath: string, holder: LockHolder | null): OutFolderError {
  const who =
    holder === null
      ? 'another hopper run'
      : `another hopper run (pid ${String(holder.pid)} on ${holder.host})`;
  return new OutFolderError(
    `--out: ${who} is saving a model in ${folder}: wait for it to finish, or give another --out. If no run is using it, delete ${lockPath}`,
  );
}

function parseHolder(text: string): LockHolder | null {
  try {
    return LockHolderSchema.parse(JSON.parse(text));
  } catch {
    return null; // Not a lock this code wrote, or one being written right now: treated as held.
  }
}

/** Whether the holder may still be running: a process on another host cannot be checked. */
function isAlive(holder: LockHolder): boolean {
  if (holder.host !== hostname()) return true;
  try {
    process.kill(holder.pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists, under another user.
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/**
 * Removes the lock at `lockPath` if it still holds `staleText`. Takeovers go one at a time, under
 * a second lock file: between reading the stale lock again and removing it nothing else can
 * change it (its holder has ended, and a new lock is only made where none is). A takeover lock
 * left by a process that died mid-takeover (which takes milliseconds) is removed once old.
 */
async function removeStaleLock(lockPath: string, staleText: string): Promise<void> {
  const takeover = `${lockPath}.takeover`;
  try {
    await writeFile(takeover, `${String(process.pid)}\n`, { flag: 'wx' });
  } catch {
    const since = await stat(takeover).then(
      (info) => Date.now() - info.mtimeMs,
      () => 0,
    );
    if (since > STALE_TAKEOVER_MS) await rm(takeover, { force: true });
    else await setTimeout(TAKEOVER_RETRY_MS);
    return;
  }
  try {
    await removeIfHolding(lockPath, staleText);
  } finally {
    await rm(takeover, { force: true });
  }
}

/** Removes the lock at `lockPath` if it still holds `text`. */
async function removeIfHolding(lockPath: string, text: string): Promise<void> {
  if ((await readFile(lockPath, 'utf8').catch(() => null)) === text) await rm(lockPath, { force: true });
}

/** A run's model copied out of the bucket: its folder, the paths of its two files, its size. */
export interface ModelOnDisk {
  readonly folder: string;
  /** `<folder>/model.onnx`. */
  readonly onnx: string;
  /** `<folder>/model.json`. */
  readonly record: string;
  readonly bytes: number;
}

/** Copies the run's model into `folder`; resolves to where its files are, and the model's size. */
export async function copyModelOut(
  s3: S3Client,
  bucket: string,
  copy: CopySlot,
  folder: string,
): Promise<ModelOnDisk> {
  await mkdir(folder, { recursive: true });
  const [onnx, record] = MODEL_FILES.map((name) => join(folder, name)) as [string, string];
  // A model.json left from an earlier run would vouch for a model.onnx not yet replaced.
  await rm(record, { force: true });
  await download(s3, bucket, copy.modelKey, onnx);
  await download(s3, bucket, copy.recordKey, record);
  return { folder, onnx, record, bytes: copy.bytes };
}

async function download(s3: S3Client, bucket: string, key: string, path: string): Promise<void> {
  // A name no other writer uses: a shared one lets one writer rename away the other's bytes.
  const partial = `${path}.${String(process.pid)}-${randomUUID()}.partial`;
  try {
    const answer = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    if (!(answer.Body instanceof Readable)) throw new Error(`s3://${bucket}/${key} has no body`);
    await pipeline(answer.Body, createWriteStream(partial));
    await rename(partial, path);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
}
