/**
 * A dataset's held-out tasks (HeldOutTask, which datasets.ts records) and an index over them, so
 * that each label request costs the same with 20,000 tasks as with 5 (a scan per request made a
 * long run's labelling quadratic). The index is derived from the tasks array and kept beside it
 * (a WeakMap: a dataset loaded from a state file, whose array is new, gets a fresh index); labels
 * are set through `labelTask` alone, which keeps it true.
 */

/** A held-out example of a dataset, and the label a client gave it (labels/next, labels). */
export interface HeldOutTask {
  task: string;
  example: { id: string; text: string };
  label?: string;
  labeledAt?: number;
}

interface TaskIndex {
  readonly byId: Map<string, HeldOutTask>;
  /** Tasks before this position are all labelled. */
  firstOpen: number;
  open: number;
  /** The latest labeledAt, or 0. */
  lastLabeledAt: number;
}

const indexes = new WeakMap<readonly HeldOutTask[], TaskIndex>();

function indexOf(tasks: readonly HeldOutTask[]): TaskIndex {
  let index = indexes.get(tasks);
  if (index === undefined) {
    index = {
      byId: new Map(tasks.map((task) => [task.task, task])),
      firstOpen: 0,
      open: tasks.filter((task) => task.label === undefined).length,
      lastLabeledAt: tasks.reduce((latest, task) => Math.max(latest, task.labeledAt ?? 0), 0),
    };
    indexes.set(tasks, index);
  }
  return index;
}

/** The first task without a label, in file order, or undefined. */
export function firstOpenTask(tasks: readonly HeldOutTask[]): HeldOutTask | undefined {
  const index = indexOf(tasks);
  while (index.firstOpen < tasks.length && tasks[index.firstOpen]?.label !== undefined) index.firstOpen++;
  return tasks[index.firstOpen];
}

/** Tasks without a label. */
export function openTaskCount(tasks: readonly HeldOutTask[]): number {
  return indexOf(tasks).open;
}

export function findTask(tasks: readonly HeldOutTask[], taskId: string): HeldOutTask | undefined {
  return indexOf(tasks).byId.get(taskId);
}

/** When the latest label was given, or 0. */
export function lastLabeledAt(tasks: readonly HeldOutTask[]): number {
  return indexOf(tasks).lastLabeledAt;
}

/** Gives `task` (one of `tasks`, without a label) its label. */
export function labelTask(tasks: readonly HeldOutTask[], task: HeldOutTask, label: string, at: number): void {
  const index = indexOf(tasks);
  task.label = label;
  task.labeledAt = at;
  index.open--;
  index.lastLabeledAt = Math.max(index.lastLabeledAt, at);
}
