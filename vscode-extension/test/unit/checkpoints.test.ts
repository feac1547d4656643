/**
 * Rewind, fork and review in the panel (issue 23), the parts that need no VS Code: a user message learns the
 * bridge's id of its turn (live from the prompt's answer, replayed from `messageId`) and then offers Rewind /
 * Changes / Fork; the rewind dialog and the Changes view say what they will do; the diff editor's Keep / Undo
 * find the hunk at the cursor.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { hunkAt } from "../../src/hunks";
import { type ConversationItem, initialState, type PanelAction, reduce } from "../../src/panel/state";
import type { ChangedFile, ReviewHunk } from "../../src/protocol";
import { changesHtml, rewindHtml } from "../../webview/checkpoints";
import { userHtml } from "../../webview/items";

const run = (...actions: PanelAction[]) => actions.reduce(reduce, initialState());
const users = (items: ConversationItem[]) => items.filter((i): i is Extract<ConversationItem, { kind: "user" }> => i.kind === "user");

describe("a user message's turn id", () => {
  it("comes with the prompt's answer, and only then are Rewind, Changes and Fork offered", () => {
    const started = run({ type: "connection", status: "ready" }, { type: "sessionStarted", sessionId: "s" }, { type: "turnStarted", turnId: 1, text: "fix it", attachments: [] });
    const [before] = users(started.items);
    assert.ok(before && before.bridgeTurn === undefined);
    assert.doesNotMatch(userHtml(before), /data-user=/, "no id yet: nothing to rewind to");
    const ended = run({ type: "connection", status: "ready" }, { type: "sessionStarted", sessionId: "s" }, { type: "turnStarted", turnId: 1, text: "fix it", attachments: [] }, { type: "turnNamed", turnId: 1, bridgeTurnId: "turn_1" }, { type: "turnEnded", turnId: 1, stopReason: "end_turn" });
    const [after] = users(ended.items);
    assert.equal(after?.bridgeTurn, "turn_1");
    assert.ok(after);
    const html = userHtml(after);
    assert.match(html, /<div class="user-actions" data-turn="turn_1">/);
    assert.deepEqual([...html.matchAll(/data-user="(\w+)"/g)].map((m) => m[1]), ["rewind", "changes", "fork"]);
  });

  it("a replayed prompt has it from its messageId", () => {
    const state = run({ type: "sessionStarted", sessionId: "s" }, { type: "update", update: { sessionUpdate: "user_message_chunk", content: { type: "text", text: "old prompt" }, messageId: "turn_9" } });
    assert.deepEqual(users(state.items).map((u) => [u.text, u.bridgeTurn]), [["old prompt", "turn_9"]]);
  });
});

describe("the rewind dialog", () => {
  const preview = {
    prompt: { index: 2, turnId: "t2", text: "change a" },
    mode: "both" as const,
    text: "Rewind the code and the conversation to before prompt 2: “change a”.\nThe conversation loses that prompt and its answer.",
    files: [
      { path: "a.txt", action: "restore" as const, conflict: "changed since by someone else", steps: ["sed -i a.txt"] },
      { path: "b.txt", action: "delete" as const, conflict: null, steps: ["echo made > b.txt"] },
    ],
    irreversible: ["`curl example.com`: a network request"],
    codeProblem: null,
  };

  it("names each file's action and steps, gives a conflict its decision (keep by default), and says what can't be undone", () => {
    const html = rewindHtml({ turnId: "t2", text: "change a", mode: "both", preview });
    assert.match(html, /<li class="rewind-file conflict" data-path="a.txt"><span class="rewind-action">restore<\/span> <code>a.txt<\/code> <span class="rewind-steps">by sed -i a.txt<\/span>/);
    assert.match(html, /⚠ changed since by someone else <select class="resolution" data-path="a.txt"[^>]*><option value="keep" selected>/);
    assert.match(html, /<li class="rewind-file" data-path="b.txt"><span class="rewind-action">delete<\/span>/);
    assert.match(html, /No rewind undoes:.*a network request/);
    assert.match(html, /The conversation loses that prompt and its answer/);
    assert.match(html, /<input type="radio" name="rewind-mode" value="both" checked>/);
    assert.match(html, /data-dialog="rewind-confirm">Rewind/);
  });

  it("can't be confirmed while the preview is fetched or failed", () => {
    assert.match(rewindHtml({ turnId: "t", text: "x", mode: "code" }), /data-dialog="rewind-confirm" disabled/);
    const failed = rewindHtml({ turnId: "t", text: "x", mode: "code", error: "No prompt 't'" });
    assert.match(failed, /class="dialog-error">No prompt &#39;t&#39;|class="dialog-error">No prompt 't'/);
    assert.match(failed, /data-dialog="rewind-confirm" disabled/);
  });
});

describe("the Changes view", () => {
  const file: ChangedFile = {
    path: "a.txt", status: "modified", binary: false, tooBig: false, oldText: "one\ntwo\nthree\nfour\n", newText: "one\nTWO\nthree\nFOUR\nfive\n",
    oldMode: "100644", newMode: "100644", editedSince: false,
    hunks: [{ index: 0, id: "h0", oldStart: 1, oldLines: 1, newStart: 1, newLines: 1 }, { index: 1, id: "h1", oldStart: 3, oldLines: 1, newStart: 3, newLines: 2 }],
    steps: [{ toolCallId: "c1", tool: "Bash", title: "sed -i a.txt", turnId: "t1" }],
  };

  it("shows every hunk's lines with its own Keep / Undo, each file's, and Keep all / Undo all", () => {
    const html = changesHtml({ title: "This session", files: [file], loaded: true });
    assert.match(html, /data-review="keep" title="Keep every change shown">Keep all/);
    assert.match(html, /data-review="undo"[^>]*>Undo all/);
    assert.match(html, /data-review="keep" data-path="a.txt">Keep<\/button><button type="button" class="secondary" data-review="undo" data-path="a.txt">Undo/);
    assert.match(html, /<span>line 2<\/span>.*data-review="keep" data-path="a.txt" data-hunk="0" data-hunk-id="h0".*<div class="del">-two<\/div><div class="add">\+TWO<\/div>/s);
    assert.match(html, /<span>line 4–5<\/span>.*data-hunk="1" data-hunk-id="h1".*<div class="del">-four<\/div><div class="add">\+FOUR<\/div><div class="add">\+five<\/div>/s);
    assert.match(html, /by sed -i a.txt/);
  });

  it("says when there is nothing left to review", () => {
    assert.match(changesHtml({ title: "x", files: [], loaded: true }), /every change is kept/);
    assert.match(changesHtml({ title: "x", turnId: "t", files: [], loaded: true }), /Nothing this prompt changed is left to review/);
  });
});

describe("the hunk at the cursor", () => {
  const hunks: ReviewHunk[] = [{ index: 0, id: "a", oldStart: 1, oldLines: 1, newStart: 1, newLines: 2 }, { index: 1, id: "b", oldStart: 6, oldLines: 2, newStart: 7, newLines: 0 }];
  it("is the one whose new lines hold the line; a deletion answers at its place or the line before", () => {
    assert.deepEqual([0, 1, 2, 3, 6, 7, 8].map((line) => hunkAt(hunks, line)?.id), [undefined, "a", "a", undefined, "b", "b", undefined]);
    // The left side counts the lines before the change: hunk b's deleted lines are 6 and 7 there.
    assert.deepEqual([1, 2, 5, 6, 7, 8].map((line) => hunkAt(hunks, line, "original")?.id), ["a", undefined, undefined, "b", "b", undefined]);
  });
});
