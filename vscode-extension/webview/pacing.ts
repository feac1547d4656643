/**
 * When the panel may render, so that typing comes first (issue 24 item 13). In code-server the panel shares one
 * renderer process with the whole workbench, on a machine of a few cores: a render of the stream (its script,
 * then layout, paint and raster of the panel, then the display compositor) is CPU taken from the next keystroke's
 * frame even when it does not run at the same moment. Measured (scripts/bench-render, 6,000 lines streamed, a key
 * every 100 ms): with the stream's text dropped before the panel sees it, keystroke → painted is 13 ms p95; with a
 * render after every pause in the typing, 22 ms p95 — the panel's renders were the difference.
 * So while the person types, the stream's text renders a few times a second, right after a key's own frame (of
 * any moment, the one furthest from the next key); anything else, and everything when nobody types, at once.
 * Measured in the same bench on a calm machine, three alternating runs each: renders 60 ms after a key and every
 * 250 ms gave 15.8–20.8 ms p95 (max 24–101); right after the key's frame and every 400 ms, 10.2–12.5 ms (max ≤ 21).
 */

/** Keys this recent mean the person is typing. */
export const typingWindowMs = 1000;
/** A render waits this long after a key: its own frame comes first, alone; then the next key is furthest away. */
export const typingGraceMs = 25;
/** While typing, renders are at least this far apart. */
export const typingEveryMs = 400;
/** While typing without a pause, a render still comes this long after the last one: the answer keeps moving. */
export const maxDeferMs = 800;
/** Even then, not in the frame of a key: the key's frame is painted first. */
export const keyFrameMs = 20;

/**
 * How long a render that is due should still wait (≤ 0: now), given the last key and the last render. Only the
 * stream's text is paced: any other change (a question, the session ready, a tool call, the turn's end) is
 * `urgent` and renders right after the key's own frame.
 */
export function renderDelay(now: number, inputAt: number, renderedAt: number, urgent = false): number {
  if (now - inputAt >= typingWindowMs) return 0;
  const afterKey = inputAt + keyFrameMs - now;
  if (urgent) return afterKey;
  const paced = Math.max(renderedAt + typingEveryMs, inputAt + typingGraceMs) - now;
  const forced = renderedAt + maxDeferMs - now;
  return Math.max(Math.min(paced, forced), afterKey);
}

/** The session updates that are the stream's text (paced while typing); every other message is urgent. */
export const streamedUpdates: ReadonlySet<string> = new Set(["agent_message_chunk", "agent_thought_chunk"]);
