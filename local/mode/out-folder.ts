/**
 * `hopper run`'s <out>/<drop>/ folder, made ready before the run starts: a run pays for its
 * model, so a folder the model could not go to is refused while refusing costs nothing. The
 * folder is created, model.onnx and model.json in it must be replaceable files, and a file is
 * written in it (only a write shows that one can: permissions, read-only mounts, a full disk).
 */
import { randomUUID } from 'node:crypto';
import { mkdir, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { MODEL_FILES } from './model-out.js';

/** Why <out>/<drop>/ cannot take the model; the message names the path and what to do. */
export class OutFolderError extends Error {
  override readonly name = 'OutFolderError';
}

export interface OutFolder {
  /** <out>/<drop> */
  readonly path: string;
  /** Removes the folders made for the run if nothing was saved in them. */
  release(): Promise<void>;
}

/**
 * Creates <out>/<drop>/ and checks it can take model.onnx and model.json.
 * @throws OutFolderError naming the path and what to do
 */
export async function prepareOutFolder(out: string, drop: string): Promise<OutFolder> {
  const path = join(out, drop);
  let created: string | undefined;
  try {
    created = await mkdir(path, { recursive: true });
  } catch (error) {
    throw await cannotCreate(path, error);
  }
  const release = async (): Promise<void> => {
    if (created !== undefined) await removeEmptyFolders(path, created);
  };
  try {
    for (const name of MODEL_FILES) {
      const file = join(path, name);
      if ((await stat(file).catch(() => null))?.isFile() === false) {
        throw new OutFolderError(
          `--out: ${file} is a folder, and hopper run saves the model as that file: move it away, or give another --out`,
        );
      }
    }
    await probeWritable(path);
  } catch (error) {
    await release();
    throw error;
  }
  return { path, release };
}

async function cannotCreate(path: string, error: unknown): Promise<OutFolderError> {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EEXIST' || code === 'ENOTDIR') {
    const file = await firstFileOnTheWay(path);
    if (file !== undefined) {
      return new OutFolderError(
        `--out: ${file} is a file, and hopper run saves the model in the folder ${path}: give another --out, or move the file away`,
      );
    }
  }
  return new OutFolderError(
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
export function describeFsError(error: unknown): string {
  const failure = error as NodeJS.ErrnoException;
  const reasons: Record<string, string> = {
    EACCES: 'permission denied',
    EPERM: 'permission denied',
    EROFS: 'a read-only file system',
    ENOSPC: 'no space left on device',
    EDQUOT: 'disk quota exceeded',
    ENOTDIR: 'a file is in the way',
    EEXIST: 'a file is in the way',
  };
  const reason = failure.code === undefined ? undefined : reasons[failure.code];
  if (reason !== undefined) return reason;
  return error instanceof Error ? error.message : String(error);
}

/** Removes `path` and its parents up to `created` while they are empty. */
async function removeEmptyFolders(path: string, created: string): Promise<void> {
  const depth = relative(created, path)
    .split(sep)
    .filter((part) => part !== '').length;
  let folder = path;
  for (let level = 0; level <= depth; level++) {
    const removed = await rmdir(folder).then(
      () => true,
      () => false,
    );
    if (!removed) return;
    folder = dirname(folder);
  }
}

/** Writes and removes a file in `folder`: the one sure test that the model can be written there. */
async function probeWritable(folder: string): Promise<void> {
  const probe = join(folder, `.hopper-run.${randomUUID()}.probe`);
  try {
    await writeFile(probe, `${String(process.pid)}\n`, { flag: 'wx' });
  } catch (error) {
    throw new OutFolderError(
      `--out: cannot write in ${folder} (${describeFsError(error)}): give --out a folder you can write to`,
    );
  } finally {
    await rm(probe, { force: true }).catch(() => undefined);
  }
}
