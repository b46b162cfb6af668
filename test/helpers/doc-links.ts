/**
 * The relative links of a Markdown file, and what is wrong with them: one that leaves the
 * repository, one whose file does not exist, one whose `#anchor` names no heading of the Markdown
 * file it points at. Parsed with markdown-it (links in code are not links); heading anchors as
 * GitHub makes them (github-slugger).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import GithubSlugger from 'github-slugger';
import MarkdownIt, { type Token } from 'markdown-it';

const markdown = new MarkdownIt({ html: false, linkify: false });

export interface DocLink {
  /** As written: `deploy.md#the-alarms`. */
  readonly target: string;
  /** The 1-based line of the paragraph, table row or item that holds it. */
  readonly line: number;
}

/** Every link and image whose target has no scheme (`https:`, `mailto:`) and is not `//host`. */
export function relativeLinks(text: string): DocLink[] {
  const links: DocLink[] = [];
  for (const block of markdown.parse(text, {})) {
    for (const token of block.children ?? []) {
      const attribute = token.type === 'link_open' ? 'href' : token.type === 'image' ? 'src' : null;
      const target = attribute === null ? null : token.attrGet(attribute);
      if (typeof target !== 'string' || /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//'))
        continue;
      links.push({ target, line: (block.map?.[0] ?? 0) + 1 });
    }
  }
  return links;
}

/** The anchors GitHub gives the headings of a Markdown text. */
export function headingAnchors(text: string): Set<string> {
  const slugger = new GithubSlugger();
  const tokens = markdown.parse(text, {});
  const anchors = new Set<string>();
  tokens.forEach((token, index) => {
    if (token.type !== 'heading_open') return;
    const inline = tokens[index + 1];
    anchors.add(slugger.slug(plainText(inline?.children ?? [])));
  });
  return anchors;
}

function plainText(children: readonly Token[]): string {
  return children
    .filter((child) => child.type === 'text' || child.type === 'code_inline')
    .map((child) => child.content)
    .join('');
}

/** What is wrong with each relative link of `file` (absolute path) in the repository at `root`. */
export function brokenLinks(file: string, root: string): string[] {
  const text = readFileSync(file, 'utf8');
  const problems: string[] = [];
  for (const { target, line } of relativeLinks(text)) {
    const where = `${relative(root, file)}:${String(line)} (${target})`;
    const [rawPath, anchor] = target.split('#', 2) as [string, string | undefined];
    const path = decodeURIComponent(rawPath);
    if (isAbsolute(path)) {
      problems.push(`${where}: an absolute path; link relative to the file`);
      continue;
    }
    const resolved = path === '' ? file : resolve(dirname(file), path);
    const inRepository = relative(root, resolved);
    if (inRepository.startsWith('..') || isAbsolute(inRepository)) {
      problems.push(`${where}: leaves the repository`);
      continue;
    }
    if (!existsSync(resolved)) {
      problems.push(`${where}: ${inRepository} does not exist`);
      continue;
    }
    if (anchor !== undefined && anchor !== '' && resolved.endsWith('.md') && statSync(resolved).isFile()) {
      if (!headingAnchors(readFileSync(resolved, 'utf8')).has(decodeURIComponent(anchor))) {
        problems.push(`${where}: ${inRepository} has no heading #${anchor}`);
      }
    }
  }
  return problems;
}
