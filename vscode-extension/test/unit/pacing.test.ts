/** When the panel renders while the person types (webview/pacing.ts; issue 24 item 13). */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { keyFrameMs, maxDeferMs, renderDelay, typingEveryMs, typingGraceMs, typingWindowMs } from "../../webview/pacing";

/** Keys every `keyEveryMs` for `ms`, a render whenever one is due: the render times. */
function simulate(keyEveryMs: number, ms: number, renderedAt = -100): { renders: number[]; sinceKey: number[] } {
  let inputAt = Number.NEGATIVE_INFINITY;
  const renders: number[] = [];
  const sinceKey: number[] = [];
  for (let t = 0; t < ms; t++) {
    if (t % keyEveryMs === 0) inputAt = t;
    if (renderDelay(t, inputAt, renderedAt) <= 0) {
      renderedAt = t;
      renders.push(t);
      sinceKey.push(t - inputAt);
    }
  }
  return { renders, sinceKey };
}

describe("render pacing while typing", () => {
  it("renders at once when nobody typed lately", () => {
    assert.ok(renderDelay(10_000, Number.NEGATIVE_INFINITY, 9_990) <= 0);
    assert.ok(renderDelay(10_000, 10_000 - typingWindowMs, 9_990) <= 0);
  });

  it("waits for the key's own frame, and keeps renders apart while typing", () => {
    // A key 10 ms ago, the last render long enough ago: right after the key's frame.
    assert.equal(renderDelay(1_000, 990, 1_000 - typingEveryMs - 50), typingGraceMs - 10);
    // The pause is there, but the last render was 100 ms ago: it waits for the pacing.
    assert.equal(renderDelay(1_000, 900, 900), typingEveryMs - 100);
    // The first render after a quiet spell still lets the key's frame go first.
    assert.equal(renderDelay(1_000, 995, Number.NEGATIVE_INFINITY), keyFrameMs - 5);
  });

  it("a change that is not the stream's text (a question, the session ready) renders right after the key's frame", () => {
    assert.equal(renderDelay(1_000, 995, 990, true), keyFrameMs - 5);
    assert.ok(renderDelay(1_000, 970, 990, true) <= 0);
    // The same moment for the stream's text: it waits for the pacing.
    assert.equal(renderDelay(1_000, 970, 990, false), typingEveryMs - 10);
  });

  it("a key every 100 ms: a render every few keys, each right after a key's frame and before the next key", () => {
    const { renders, sinceKey } = simulate(100, 3_000);
    for (const s of sinceKey) assert.ok(s >= typingGraceMs && s <= 100 - 50, `a render ${s} ms after a key`);
    for (let i = 1; i < renders.length; i++) assert.ok((renders[i] ?? 0) - (renders[i - 1] ?? 0) >= typingEveryMs);
    const most = Math.floor(3_000 / typingEveryMs) + 1;
    assert.ok(renders.length >= most - 2 && renders.length <= most, `${renders.length} renders in 3 s`);
  });

  it("typing without a pause (a key every 30 ms) still renders every maxDeferMs, never in a key's frame", () => {
    const { renders, sinceKey } = simulate(30, 3_000);
    for (const s of sinceKey) assert.ok(s >= keyFrameMs, `a render ${s} ms after a key`);
    for (let i = 1; i < renders.length; i++) assert.ok((renders[i] ?? 0) - (renders[i - 1] ?? 0) <= maxDeferMs + 30);
    assert.ok(renders.length >= 5, `${renders.length} renders in 3 s`);
  });
});
