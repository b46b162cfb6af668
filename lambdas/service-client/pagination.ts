/**
 * Cursor-paged lists (docs/service-contract.md, B10) as async iterators: `for await (const item of list)` walks every
 * item, newest first; `list.pages()` walks whole pages. Pages are fetched only as they are read.
 */
import type { Page } from './contract.js';
import { unexpectedResponse } from './errors.js';

export type FetchPage<T> = (cursor: string | undefined) => Promise<Page<T>>;

export class CursorList<T> implements AsyncIterable<T> {
  readonly #fetchPage: FetchPage<T>;
  readonly #endpoint: string;

  constructor(endpoint: string, fetchPage: FetchPage<T>) {
    this.#endpoint = endpoint;
    this.#fetchPage = fetchPage;
  }

  async *pages(): AsyncGenerator<Page<T>, void, undefined> {
    const seen = new Set<string>();
    let cursor: string | undefined;
    for (;;) {
      const page = await this.#fetchPage(cursor);
      yield page;
      if (page.next === null) return;
      // A cursor handed out twice would page forever.
      if (seen.has(page.next)) {
        const message = `${this.#endpoint}: the service returned a cursor it had returned before`;
        throw unexpectedResponse(this.#endpoint, 200, 'next', message);
      }
      seen.add(page.next);
      cursor = page.next;
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    for await (const page of this.pages()) yield* page.data;
  }
}
