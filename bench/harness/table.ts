/** The summary table `npm run bench` prints (and docs/performance.md records). */
import { round, type Figure } from './figures.js';

function goalText(figure: Figure): string {
  if (figure.goal === null) return '';
  const { on, op, limit } = figure.goal;
  return on === 'ratio' ? `ratio ${op} ${limit}` : `${op} ${limit} ${figure.unit}`;
}

function metText(figure: Figure): string {
  if (figure.met === null) return '';
  return figure.met ? 'met' : `NO (${figure.shortBy ?? ''})`;
}

const text = (value: number | null) => (value === null ? '' : String(round(value)));

/** A Markdown table: readable in a terminal, pasted as is into docs/performance.md. */
export function formatTable(figures: readonly Figure[]): string {
  const header = ['figure', 'value', 'unit', 'spread', 'baseline', 'ratio', 'goal', 'met'];
  const rows = figures.map((figure) => [
    figure.label,
    text(figure.value),
    figure.unit,
    `${(figure.spread * 100).toFixed(0)}%`,
    text(figure.baseline),
    text(figure.ratio),
    goalText(figure),
    metText(figure),
  ]);
  const widths = header.map((cell, column) =>
    Math.max(cell.length, ...rows.map((row) => row[column]!.length)),
  );
  const line = (cells: readonly string[]) =>
    `| ${cells.map((cell, column) => cell.padEnd(widths[column]!)).join(' | ')} |`;
  return [line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)].join('\n');
}
