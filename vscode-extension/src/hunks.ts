import type { ReviewHunk } from "./protocol";

/**
 * The hunk of the agent's changes a 0-based line of the file (as it is now) falls in: the diff editor's Keep / Undo
 * act on it (`side`: the cursor is in the diff's left side, the text before the change). A deletion has no lines left:
 * the line where it was, or the one before it. Pure (the unit tests read it).
 */
export function hunkAt(hunks: ReviewHunk[], line: number, side: "modified" | "original" = "modified"): ReviewHunk | undefined {
  const at = (start: number, count: number): boolean => (count ? line >= start && line < start + count : line === start || line === start - 1);
  return hunks.find((h) => (side === "modified" ? at(h.newStart, h.newLines) : at(h.oldStart, h.oldLines)));
}
