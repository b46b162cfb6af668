import { createHash, randomBytes } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, HeadObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { inboxKey } from '../../lambdas/storage/keys.js';
import { DropFolderError, readDropFolder, uploadDropFolder } from '../../local/cli/drop-folder.js';
import { startLocalS3, type LocalS3 } from '../../local/s3/local-s3.js';
import { uniqueDrop } from '../helpers/fixtures.js';

const temps: string[] = [];
afterEach(async () => {
  await Promise.all(temps.splice(0).map((path) => rm(path, { recursive: true, force: true })));
});

async function tempDir(): Promise<string> {
  const path = await mkdtemp(join(tmpdir(), 'hopper-drop-test-'));
  temps.push(path);
  return path;
}

/** A folder named `drop` holding `files` (names with `/` make sub-folders). */
async function dropFolder(drop: string, files: Readonly<Record<string, string | Buffer>>): Promise<string> {
  const folder = join(await tempDir(), drop);
  await mkdir(folder, { recursive: true });
  for (const [name, content] of Object.entries(files)) {
    const path = join(folder, ...name.split('/'));
    await mkdir(join(path, '..'), { recursive: true });
    await writeFile(path, content);
  }
  return folder;
}

async function text(stream: AsyncIterable<Buffer>): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

async function dropError(folder: string): Promise<DropFolderError> {
  const error: unknown = await readDropFolder(folder).then(
    () => null,
    (caught: unknown) => caught,
  );
  if (!(error instanceof DropFolderError))
    throw new Error(`expected a DropFolderError, got ${String(error)}`);
  return error;
}

describe('readDropFolder', () => {
  it('refuses a folder that does not exist, naming it', async () => {
    const missing = join(await tempDir(), 'nowhere');
    expect((await dropError(missing)).message).toBe(`${missing}: no such folder`);
  });

  it('refuses a file and asks for the folder that holds it', async () => {
    const folder = await dropFolder('reviews', { 'train.json': '{}' });
    const error = await dropError(join(folder, 'train.json'));
    expect(error.message).toContain(join(folder, 'train.json'));
    expect(error.message).toMatch(/is a file; give the folder that holds the data and train\.json/);
  });

  it('refuses a folder without train.json and says how to add one', async () => {
    const folder = await dropFolder('reviews', { 'reviews.csv': 'text\nhello\n' });
    const error = await dropError(folder);
    expect(error.message).toContain(`${folder} has no train.json`);
    expect(error.message).toContain('{} is valid');
    expect(error.message).toContain('docs/drop-format.md');
  });

  it('does not take a train.json in a sub-folder for the drop’s own', async () => {
    const folder = await dropFolder('reviews', { 'reviews.csv': 'text\nhi\n', 'old/train.json': '{}' });
    expect((await dropError(folder)).message).toContain('has no train.json');
  });

  it('lists the folder as the bucket lists a drop: plain files with their size and the etag of a whole put, sub-folders as `/` names', async () => {
    const folder = await dropFolder('reviews', {
      'train.json': '{"name":"r"}',
      'reviews.csv': 'text\nhello\n',
      'labels.csv': 'id,label\n',
      'more/b.jsonl': '{"text":"x"}\n',
      'more/deeper/a.csv': '',
      'é.csv': 'text\né\n',
      'z.csv': '',
    });
    const md5 = (text: string) => createHash('md5').update(text).digest('hex');
    const read = await readDropFolder(folder);
    expect(read).toMatchObject({
      drop: 'reviews',
      root: folder,
      nested: ['more/b.jsonl', 'more/deeper/a.csv'],
    });
    // In S3's order: by the names' UTF-8 bytes.
    expect([...read.files.values()]).toEqual([
      { name: 'labels.csv', bytes: 9, etag: md5('id,label\n') },
      { name: 'reviews.csv', bytes: 11, etag: md5('text\nhello\n') },
      { name: 'train.json', bytes: 12, etag: md5('{"name":"r"}') },
      { name: 'z.csv', bytes: 0, etag: md5('') },
      { name: 'é.csv', bytes: 8, etag: md5('text\né\n') },
    ]);
    expect(await text(await read.trainJson())).toBe('{"name":"r"}');
    expect(
      await text(
        await (read.open?.({ name: 'labels.csv', bytes: 9, etag: '' }) ??
          Promise.reject(new Error('no open'))),
      ),
    ).toBe('id,label\n');
  });

  it('names the drop after the folder, however the path is written', async () => {
    const folder = await dropFolder('my-drop', { 'train.json': '{}' });
    expect((await readDropFolder(`${folder}/`)).drop).toBe('my-drop');
    expect((await readDropFolder(join(folder, 'sub', '..'))).drop).toBe('my-drop');
    expect([...(await readDropFolder(folder)).files.keys()]).toEqual(['train.json']);
  });

  it('refuses every symbolic link (to a file, to a folder, dangling, in a sub-folder), naming each and how to fix it', async () => {
    const elsewhere = await dropFolder('elsewhere', { 'secret.csv': 'text\nsecret\n', 'dir/a.csv': 'x' });
    const folder = await dropFolder('linked', {
      'train.json': '{}',
      'reviews.csv': 'text\nok\n',
      'sub/b.csv': 'x',
    });
    await symlink(join(elsewhere, 'secret.csv'), join(folder, 'extra.csv'));
    await symlink(join(elsewhere, 'dir'), join(folder, 'more'));
    await symlink(join(elsewhere, 'gone.csv'), join(folder, 'dangling.csv'));
    await symlink('../reviews.csv', join(folder, 'sub', 'again.csv'));
    const error = await dropError(folder);
    expect(error.code).toBe('linked_files');
    expect(error.message).toBe(
      `${folder} holds symbolic links: "dangling.csv" -> "${join(elsewhere, 'gone.csv')}", "extra.csv" -> "${join(elsewhere, 'secret.csv')}", "more" -> "${join(elsewhere, 'dir')}", "sub/again.csv" -> "../reviews.csv". Hopper sends only the files inside the drop folder and follows no link out of it: replace each link by a copy of what it points to, or move it out of the folder`,
    );
  });

  it('refuses a train.json that is a link', async () => {
    const elsewhere = await dropFolder('elsewhere', { 'train.json': '{}' });
    const folder = await dropFolder('linked', { 'reviews.csv': 'text\nok\n' });
    await symlink(join(elsewhere, 'train.json'), join(folder, 'train.json'));
    expect(await dropError(folder)).toMatchObject({
      code: 'linked_files',
      message: expect.stringMatching(/ "train\.json" -> /) as string,
    });
  });
});

describe('uploadDropFolder', () => {
  let local: LocalS3;
  beforeAll(async () => {
    local = await startLocalS3();
  });
  afterAll(async () => {
    await local.close();
  });

  /** Keys in the order s3rver stored them, while `during` runs. */
  async function storedKeys(during: () => Promise<unknown>): Promise<string[]> {
    const emitter = local.server as unknown as EventEmitter;
    const keys: string[] = [];
    const onEvent = (notification: { Records: { s3: { object: { key: string } } }[] }): void => {
      for (const record of notification.Records) keys.push(record.s3.object.key);
    };
    emitter.on('event', onEvent);
    try {
      await during();
    } finally {
      emitter.off('event', onEvent);
    }
    return keys;
  }

  async function objectBytes(key: string): Promise<Buffer> {
    const answer = await local.client.send(new GetObjectCommand({ Bucket: local.bucket, Key: key }));
    return Buffer.from((await answer.Body?.transformToByteArray()) ?? []);
  }

  it('puts every plain file byte for byte, with the etag it was read with, train.json last, and returns its etag', async () => {
    const drop = uniqueDrop('upload');
    // More files than uploads run at once, of several sizes.
    const files: Record<string, Buffer> = {
      'train.json': Buffer.from('{"name":"upload test"}'),
      'empty.csv': Buffer.alloc(0),
      // Over 8 MiB: its etag is hashed as it streams, not read whole.
      'big.bin': randomBytes(9 * 1024 * 1024 + 17),
      'ünïcödé.jsonl': Buffer.from('{"text":"ünïcödé"}\n'),
    };
    for (let index = 0; index < 9; index += 1) files[`part-${String(index)}.csv`] = randomBytes(1000 + index);
    // Not a drop's: the run's rules refuse it (nested_files) before hopper run uploads anything.
    const folder = await dropFolder(drop, { ...files, 'sub/nested.jsonl': 'x' });

    let etag = '';
    const read = await readDropFolder(folder);
    const order = await storedKeys(async () => {
      etag = await uploadDropFolder(local.client, local.bucket, read);
    });

    const names = Object.keys(files);
    expect(order).toHaveLength(names.length);
    for (const file of read.files.values()) {
      const head = await local.client.send(
        new HeadObjectCommand({ Bucket: local.bucket, Key: inboxKey(drop, file.name) }),
      );
      expect(head.ETag).toBe(`"${file.etag}"`);
    }
    expect(order.at(-1)).toBe(inboxKey(drop, 'train.json'));
    expect([...order].sort()).toEqual(names.map((name) => inboxKey(drop, name)).sort());
    for (const [name, content] of Object.entries(files)) {
      expect((await objectBytes(inboxKey(drop, name))).equals(content), name).toBe(true);
    }
    const head = await local.client.send(
      new HeadObjectCommand({ Bucket: local.bucket, Key: inboxKey(drop, 'train.json') }),
    );
    expect(etag).toBe(head.ETag);
  });

  it('puts train.json alone for a folder of only train.json', async () => {
    const drop = uniqueDrop('upload');
    const folder = await dropFolder(drop, { 'train.json': '{}' });
    const read = await readDropFolder(folder);
    const order = await storedKeys(() => uploadDropFolder(local.client, local.bucket, read));
    expect(order).toEqual([inboxKey(drop, 'train.json')]);
  });

  it('fails naming a file that cannot be read, and then does not put train.json', async () => {
    const drop = uniqueDrop('upload');
    const folder = await dropFolder(drop, {
      'train.json': '{}',
      'a.csv': 'text\na\n',
      'gone.csv': 'text\nb\n',
    });
    const read = await readDropFolder(folder);
    await rm(join(folder, 'gone.csv')); // vanishes between reading the folder and uploading it
    const order = await storedKeys(async () => {
      await expect(uploadDropFolder(local.client, local.bucket, read)).rejects.toThrow(/ENOENT.*gone\.csv/);
    });
    expect(order).not.toContain(inboxKey(drop, 'train.json'));
  });
});
