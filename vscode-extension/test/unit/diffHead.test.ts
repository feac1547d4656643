/**
 * A diff card's head says what the texts are (attack round 8): a file the bridge has not read yet (an edit outside
 * the workspace, asked before it is looked at) is not called a new file.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { diffHtml, type ViewContext } from "../../webview/items";

const ctx: ViewContext = { folders: ["/w"], paths: () => undefined };

describe("a diff card's head", () => {
  it("calls a file with no old text a new file", () => {
    assert.match(diffHtml({ type: "diff", path: "/w/a.txt", oldText: null, newText: "x\n" }, ctx), /new file/);
  });
  it("says a file not read yet is not read, and not that it is new", () => {
    const html = diffHtml({ type: "diff", path: "/o/a.txt", oldText: null, newText: "x\n", _meta: { partial: true, unread: true } }, ctx);
    assert.match(html, /file not read/);
    assert.doesNotMatch(html, /new file/);
  });
  it("says nothing of the kind for an edit of a file it read", () => {
    const html = diffHtml({ type: "diff", path: "/w/a.txt", oldText: "a\n", newText: "b\n" }, ctx);
    assert.doesNotMatch(html, /new file|not read/);
  });
});
