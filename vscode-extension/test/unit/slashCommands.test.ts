import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { commandAt, commandMatches } from "../../webview/composer";
import type { AvailableCommand } from "../../src/protocol";

const commands: AvailableCommand[] = [
  { name: "compact", description: "Summarize the conversation", input: { hint: "what to keep" } },
  { name: "clear", description: "Start over" },
  { name: "pdf-tools", description: "Skill: fill and split PDFs", input: { hint: "what to do" } },
  { name: "mcp__docs__search", description: "MCP prompt" },
];

describe("slash-command completion", () => {
  it("opens only for a / at the very start, while the caret is in the name", () => {
    assert.deepEqual(commandAt("/co", 3), { query: "co" });
    assert.deepEqual(commandAt("/", 1), { query: "" });
    assert.equal(commandAt("/compact now", 12), undefined, "past the name: the arguments are being typed");
    assert.equal(commandAt("please /compact", 15), undefined, "not at the start: plain text");
    assert.equal(commandAt("a/b", 3), undefined);
  });

  it("lists every kind of command, prefix matches first, then those containing the query", () => {
    assert.deepEqual(commandMatches(commands, "").map((c) => c.name), ["compact", "clear", "pdf-tools", "mcp__docs__search"]);
    assert.deepEqual(commandMatches(commands, "c").map((c) => c.name), ["compact", "clear", "mcp__docs__search"]);
    assert.deepEqual(commandMatches(commands, "pdf").map((c) => c.name), ["pdf-tools"], "a skill is a command like the others");
    assert.deepEqual(commandMatches(commands, "SEARCH").map((c) => c.name), ["mcp__docs__search"], "case does not matter");
    assert.deepEqual(commandMatches(commands, "zzz"), []);
  });
});
