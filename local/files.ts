/**
 * The files the `hopper` command reads besides its code, found from its root: the repository's
 * in a clone, the package's when installed (scripts/pack.ts puts each at the same path). The
 * compiled command (dist/hopper.mjs) and this module both sit one folder below that root.
 */
const ROOT = new URL('../', import.meta.url);

/** The version `hopper --version` prints. */
export const PACKAGE_JSON = new URL('package.json', ROOT);
/** Every run error code, what it means and what to do: the console shows a failed run's row. */
export const ERRORS_DOC = new URL('docs/errors.md', ROOT);
/** The local console's page. */
export const CONSOLE_PAGE = new URL('local/console/page/', ROOT);
/** The definition local mode runs, synthesized from the construct by `npm run build`. */
export const LOCAL_DEFINITION = new URL('dist/definition.json', ROOT);

/** Hopper's own stack as `npm run build` synthesized it: what `hopper permissions` checks by default. */
export const HOPPER_TEMPLATE = new URL('dist/hopper.template.json', ROOT);

/** The handler bundle local mode runs for a Task: the one the construct deploys. */
export function handlerBundle(name: string): URL {
  return new URL(`dist/handlers/${name}/index.mjs`, ROOT);
}
