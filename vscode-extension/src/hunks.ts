import type { ReviewHunk } from "./protocol";

/**
 * The hunk of the agent's changes a 0-based line of the file (as it is now) falls in: the diff editor's Keep / Undo
 * act on it. A deletion has no lines left: the line where it was, or the one before it. Pure (the unit tests read it).
 */
export function hunkAt(hunks: ReviewHunk[], line: number): ReviewHunk | undefined {
  return hunks.find((h) => (h.newLines ? line >= h.newStart && line < h.newStart + h.newLines : line === h.newStart || line === h.newStart - 1));
}
