/**
 * `npm run crash-explorer [-- --max-trials N --max-seconds S --kinds kill,garble]`: every crash
 * point of a drop in local mode (explore.ts), one after another; prints a line per trial and the
 * figures, and exits 1 when any point did not hold (docs/reliability.md, "Crash-point explorer").
 */
import { parseArgs } from 'node:util';
import { ALL_KINDS, explore, summaryOf, trialsOf } from './explore.js';
import type { TrialKind } from './trials.js';

const { values } = parseArgs({
  options: {
    'max-trials': { type: 'string', default: '400' },
    'max-seconds': { type: 'string', default: '1500' },
    kinds: { type: 'string', default: ALL_KINDS.join(',') },
  },
});
const kinds = values.kinds.split(',') as TrialKind[];
const unknown = kinds.filter((kind) => !ALL_KINDS.includes(kind));
if (unknown.length > 0) {
  process.stderr.write(`unknown kinds ${unknown.join(', ')}; the kinds are ${ALL_KINDS.join(', ')}\n`);
  process.exit(2);
}
const exploration = await explore({
  trials: (effects) => trialsOf(effects, kinds),
  maxTrials: Number(values['max-trials']),
  maxSeconds: Number(values['max-seconds']),
  log: (line) => process.stdout.write(`${line}\n`),
});
process.stdout.write(`\n${summaryOf(exploration)}\n`);
const failed = exploration.results.some((result) => result.reached && result.violations.length > 0);
process.exit(failed ? 1 : 0);
