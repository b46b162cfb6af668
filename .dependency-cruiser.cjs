/**
 * The import rules of lambdas/, infra/ and local/ (`npm run deps`): no import circle, type-only
 * imports included, and each layer of lambdas/ imports only the layers below it
 * (docs/architecture.md#the-modules).
 * @type {import('dependency-cruiser').IConfiguration}
 */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import circle, type-only imports included (tsPreCompilationDeps).',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-orphans',
      severity: 'error',
      comment: 'A file nothing imports and that is no entry point is dead code.',
      from: { orphan: true, pathNot: ['\\.d\\.ts$'] },
      to: {},
    },
    {
      name: 'lambdas-not-tools',
      severity: 'error',
      comment: 'What runs in Lambda imports neither local mode nor the CDK code; they import it.',
      from: { path: '^lambdas/' },
      to: { path: '^(local|infra)/' },
    },
    {
      name: 'libraries-not-run',
      severity: 'error',
      comment: 'service-client/ and storage/ are libraries: they import no run code.',
      from: { path: '^lambdas/(service-client|storage)/' },
      to: { path: '^lambdas/', pathNot: '^lambdas/(service-client|storage)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.mjs', '.cjs', '.d.ts'],
    },
  },
};
