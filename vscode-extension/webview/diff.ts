export interface DiffLine {
  op: "same" | "add" | "del";
  text: string;
}

/**
 * A cheap line diff for tool cards: the common head and tail stay as context (at most 3 lines each), the
 * middle shows as removed then added. Enough to read an edit at a glance; the diff editor shows the rest.
 */
export function lineDiff(oldText: string, newText: string, context = 3): DiffLine[] {
  const a = oldText ? oldText.split("\n") : [];
  const b = newText ? newText.split("\n") : [];
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const lines: DiffLine[] = [];
  for (const text of a.slice(Math.max(0, head - context), head)) lines.push({ op: "same", text });
  for (const text of a.slice(head, a.length - tail)) lines.push({ op: "del", text });
  for (const text of b.slice(head, b.length - tail)) lines.push({ op: "add", text });
  for (const text of a.slice(a.length - tail, Math.min(a.length, a.length - tail + context))) lines.push({ op: "same", text });
  return lines;
}
