/**
 * The layers of lambdas/, lowest first (docs/architecture.md#the-modules): a layer imports its
 * own folders and the layers below it, never one above.
 */
const LAYERS = [
  ['service-client', 'storage'], // libraries: the training service's client, S3 reads and writes
  ['core'], // the run's state, vocabulary, codes, words and schedule; pure
  ['drop'], // the drop format: train.json and labels to the run's configuration
  ['records'], // what a person reads: the status file, the run events
  ['ownership'], // who holds a drop and what it paid for: claims, ledger, supersede, resume, adopt
  ['runtime'], // one Lambda invocation: its stages, logger, metrics, tracing, deadline
  ['steps', 'trigger'], // each Task's domain work, and the trigger's
  ['handlers'], // the Lambda entry points, thin
];
const folders = (layers) => `^lambdas/(${layers.flat().join('|')})/`;
const layerRules = LAYERS.slice(0, -1).map((layer, i) => ({
  name: `layer-${layer.join('-')}`,
  severity: 'error',
  comment: `lambdas/${layer.join('/, lambdas/')}/ imports no layer above it.`,
  from: { path: folders([layer]) },
  to: { path: folders(LAYERS.slice(i + 1)) },
}));

/**
 * The import rules of lambdas/, infra/ and local/ (`npm run deps`): no import circle, type-only
 * imports included, and each layer of lambdas/ (LAYERS) imports only itself and the layers below
 * it
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
      name: 'lambdas-in-a-layer',
      severity: 'error',
      comment: 'Every folder of lambdas/ is in one layer of LAYERS.',
      from: { path: '^lambdas/', pathNot: folders(LAYERS) },
      to: {},
    },
    ...layerRules,
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
