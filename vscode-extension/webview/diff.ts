import { structuredPatch } from "diff";

export interface DiffLine {
  op: "same" | "add" | "del";
  text: string;
}

export interface Hunk {
  /** 1-based first line of the hunk in the old and the new text. */
  oldStart: number;
  newStart: number;
  lines: DiffLine[];
}

/** Past this many changed lines the exact diff is not worth its time in a card: head/tail instead. */
const maxEditLength = 2000;

/**
 * An edit's hunks for a card, as a unified diff reads (jsdiff, 3 lines of context). A huge rewrite falls
 * back to one hunk: the common head and tail as context, the middle removed then added.
 */
export function diffHunks(oldText: string, newText: string, context = 3): Hunk[] {
  const patch = structuredPatch("a", "b", oldText, newText, undefined, undefined, { context, maxEditLength });
  if (!patch) return [headTail(oldText, newText, context)];
  return patch.hunks.map((h) => ({
    oldStart: h.oldStart,
    newStart: h.newStart,
    lines: h.lines.filter((l) => !l.startsWith("\\")).map((l) => ({ op: l[0] === "+" ? "add" : l[0] === "-" ? "del" : "same", text: l.slice(1) })),
  }));
}

/** The common head and tail stay as context (at most `context` lines each), the middle is removed then added. */
export function headTail(oldText: string, newText: string, context = 3): Hunk {
  const a = oldText ? oldText.split("\n") : [];
  const b = newText ? newText.split("\n") : [];
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const lines: DiffLine[] = [];
  const from = Math.max(0, head - context);
  for (const text of a.slice(from, head)) lines.push({ op: "same", text });
  for (const text of a.slice(head, a.length - tail)) lines.push({ op: "del", text });
  for (const text of b.slice(head, b.length - tail)) lines.push({ op: "add", text });
  for (const text of a.slice(a.length - tail, Math.min(a.length, a.length - tail + context))) lines.push({ op: "same", text });
  return { oldStart: from + 1, newStart: from + 1, lines };
}
