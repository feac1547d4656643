/**
 * The bridge's stderr into the extension's log (src/logLines.ts): whole lines only, so a key that straddles two
 * pipe chunks is redacted like any other; each line at the level the bridge logged it; no blank entries.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type LogLevel, LogLines, levelOf } from "../../src/logLines";
import { poll } from "../poll";

const key = "sk-ant-api03-" + "Q".repeat(80);
const redact = (text: string): string => text.replace(/sk-ant-[A-Za-z0-9_-]{8,}/g, "«api key»");

function collect(idleMs = 250): { lines: LogLines; seen: [LogLevel, string][] } {
  const seen: [LogLevel, string][] = [];
  return { lines: new LogLines({ line: (level, text) => seen.push([level, redact(text)]) }, idleMs), seen };
}

describe("the bridge's stderr in the extension's log", () => {
  it("a key split between two chunks is redacted: lines are handed on whole", () => {
    const { lines, seen } = collect();
    const text = `WARNING bridge.model: request failed with key ${key} attached\n`;
    for (let cut = 1; cut < text.length - 1; cut += 7) {
      seen.length = 0;
      lines.push(text.slice(0, cut));
      lines.push(text.slice(cut));
      assert.deepEqual(seen, [["warn", "WARNING bridge.model: request failed with key «api key» attached"]], `cut at ${cut}`);
    }
    lines.dispose();
  });

  it("each line once, without its newline, blank lines and \\r dropped, at the bridge's level", () => {
    const { lines, seen } = collect();
    lines.push("INFO bridge.offline: listening\r\n\nERROR bridge.x: boom\nDEBUG y\nTraceback (most recent call last):\n");
    assert.deepEqual(seen, [
      ["info", "INFO bridge.offline: listening"],
      ["error", "ERROR bridge.x: boom"],
      ["debug", "DEBUG y"],
      ["info", "Traceback (most recent call last):"],
    ]);
    lines.dispose();
  });

  it("a tail without its newline goes after a moment, or before the extension's own next line", async () => {
    const { lines, seen } = collect(20);
    lines.push("CRITICAL the bridge stops mid-line");
    assert.deepEqual(seen, []);
    await poll("the tail to be handed on", () => seen.length === 1, 2000, 5);
    assert.deepEqual(seen, [["error", "CRITICAL the bridge stops mid-line"]]);
    lines.push("partial");
    lines.flush();
    assert.deepEqual(seen.at(-1), ["info", "partial"]);
    lines.dispose();
  });

  it("a line of megabytes goes in parts cut at spaces, a key in it whole", () => {
    const { lines, seen } = collect();
    const words = Array.from({ length: 40000 }, (_, i) => (i === 20000 ? key : `w${i}`)).join(" ");
    lines.push(words.slice(0, 100000));
    lines.push(words.slice(100000) + "\n");
    const parts = seen.map(([, text]) => text);
    assert.ok(parts.length > 1, "the line went in parts");
    // What waits for its newline is bounded; a whole line goes as it is.
    assert.ok(parts.slice(0, -1).every((p) => p.length <= 64 * 1024));
    assert.equal(parts.join("").includes("sk-ant"), false, "no key is left");
    assert.equal(parts.join("").split("«api key»").length, 2);
  });

  it("levelOf reads the bridge's format, nothing else", () => {
    assert.equal(levelOf("WARNING bridge.a: b"), "warn");
    assert.equal(levelOf("a WARNING in the middle"), "info");
    assert.equal(levelOf("ERRORS are not a level"), "info");
  });
});
