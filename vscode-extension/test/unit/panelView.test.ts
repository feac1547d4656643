import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { attachmentOf, describePrompt } from "../../src/panel/attachments";
import { rankFiles } from "../../src/panel/fileSearch";
import { type ConversationItem, initialState, type PanelAction, type PanelState, reduce } from "../../src/panel/state";
import type { PermissionOption } from "../../src/protocol";
import { mentionAt, mentionsIn } from "../../webview/composer";
import { cardOptions, permissionHtml, progressText, statusText, toolHtml, turnEndHtml, userHtml, type ViewContext } from "../../webview/items";

const ctx: ViewContext = { folders: ["/w"], paths: () => undefined };
type Card = Extract<ConversationItem, { kind: "permission" }>;
const options: PermissionOption[] = [
  { optionId: "reject_once", name: "Reject", kind: "reject_once" },
  { optionId: "allow_always", name: "Always allow Bash(rm -rf *) (saved to settings.local.json)", kind: "allow_always", _meta: { rule: "Bash(rm -rf *)", destination: "/w/.claude/settings.local.json" } },
  { optionId: "allow_once", name: "Allow once", kind: "allow_once" },
];
const card = (extra: Partial<Card> = {}): Card => ({ kind: "permission", id: "p1", turnId: 1, title: "`rm -rf build`", toolKind: "execute", options, hasDiff: false, diffs: [], destructive: false, ...extra });

describe("permission card", () => {
  it("Allow once is first and primary; the always rule is secondary, and no digit saves it", () => {
    const shown = cardOptions(card());
    assert.deepEqual(shown.map((o) => [o.option.kind, o.key, o.primary]), [["allow_once", 1, true], ["reject_once", 2, false], ["allow_always", undefined, false]]);
    const html = permissionHtml(card(), ctx);
    assert.match(html, /<button type="button" class="option allow allow_once primary" data-action="permission" data-option="allow_once" data-key="1">/);
    assert.match(html, /class="option allow allow_always secondary" data-action="permission" data-option="allow_always" title="Saved to \/w\/.claude\/settings.local.json">/);
    assert.match(html, /Always allow Bash\(rm -rf \*\) \(saved to settings.local.json\)/);
  });

  it("a destructive request keeps its always option behind More…, without a key, and warns", () => {
    const html = permissionHtml(card({ destructive: true }), ctx);
    assert.deepEqual(cardOptions(card({ destructive: true })).map((o) => o.key), [1, 2, undefined]);
    assert.match(html, /<details class="more"><summary>More…<\/summary><div class="options"><button[^>]*allow_always/);
    assert.match(html, /⚠ This deletes or overwrites/);
    assert.match(html, /<kbd>1<\/kbd>–<kbd>2<\/kbd> answer/);
  });

  it("a pending edit shows its diff; an answered card is one line with the choice", () => {
    const edit = card({ title: "Edit a.py", toolKind: "edit", hasDiff: true, diffs: [{ type: "diff", path: "/w/a.py", oldText: "x = 1", newText: "x = 2" }] });
    const html = permissionHtml(edit, ctx);
    assert.match(html, /data-path="\/w\/a.py"[^>]*>a.py<\/a>.*<span class="review proposed">proposed<\/span>/);
    assert.match(html, /<span class="line del">- x = 1<\/span><span class="line add">\+ x = 2<\/span>/);
    assert.match(html, /data-action="openDiff"/);
    assert.match(permissionHtml({ ...edit, answer: "Reject", answerKind: "reject_once" }, ctx), /^<span class="answered rejected">✗ Edit a.py — Reject<\/span>$/);
  });
});

describe("tool card", () => {
  type Tool = Extract<ConversationItem, { kind: "tool" }>;
  const tool = (extra: Partial<Tool>): Tool => ({ kind: "tool", id: "t", turnId: 1, toolCallId: "t", title: "Edit `a.py`", toolKind: "edit", status: "completed", output: "     1\tx = 2", diffs: [], locations: [], ...extra });
  const diff = { type: "diff" as const, path: "/w/a.py", oldText: "x = 1", newText: "x = 2" };

  it("a written edit shows its diff, not the model's cat -n text", () => {
    const html = toolHtml(tool({ diffs: [diff] }), ctx);
    assert.ok(!html.includes("pre class=\"output\""), html);
    assert.match(html, /<span class="review applied">written<\/span>/);
    assert.match(html, /<span class="badge completed">✓ done<\/span>/);
  });

  it("a rejected edit keeps the proposed diff, marked; its failure text shows", () => {
    const html = toolHtml(tool({ status: "failed", output: "Permission denied by user", proposed: [diff], review: "rejected" }), ctx);
    assert.match(html, /<pre class="output">Permission denied by user<\/pre>/);
    assert.match(html, /<span class="review rejected">rejected — not written<\/span>/);
  });

  it("locations are file links at their line, shown relative to the workspace", () => {
    const html = toolHtml(tool({ title: "Read", toolKind: "read", output: "", locations: [{ path: "/w/src/b.ts", line: 12 }, { path: "/else/c.ts" }] }), ctx);
    assert.match(html, /<a class="file-link location" href="#" data-path="\/w\/src\/b.ts" data-line="12" [^>]*>src\/b.ts:12<\/a>/);
    assert.match(html, /data-path="\/else\/c.ts" [^>]*>\/else\/c.ts<\/a>/);
  });
});

describe("chips and attachments", () => {
  it("a chip with a file is a file link; the prompt's resources become chips at their line", () => {
    const { text, attachments } = describePrompt([
      { type: "text", text: "look" },
      { type: "resource", resource: { uri: "file:///w/a%20b.py#L3-5", text: "x" } },
      { type: "resource_link", uri: "file:///w/src/c.ts", name: "src/c.ts" },
      { type: "resource", resource: { uri: "file:///w/d.py#problems", text: "…" } },
    ]);
    assert.equal(text, "look");
    assert.deepEqual(attachments, [
      { label: "a b.py:3-5", path: "/w/a b.py", line: 3 },
      { label: "src/c.ts", path: "/w/src/c.ts" },
      { label: "d.py problems", path: "/w/d.py" },
    ]);
    assert.deepEqual(attachmentOf("untitled:Untitled-1"), { label: "Untitled-1" });
    const html = userHtml({ kind: "user", id: "u", turnId: 1, text: "<b>", attachments });
    assert.match(html, /<div class="text">&lt;b&gt;<\/div>/);
    assert.match(html, /<a class="file-link chip" href="#" data-path="\/w\/a b.py" data-line="3"/);
  });
});

describe("@-mentions", () => {
  it("finds the @query before the caret, not an e-mail address", () => {
    assert.deepEqual(mentionAt("look at @src/pa", 15), { start: 8, query: "src/pa" });
    assert.deepEqual(mentionAt("@", 1), { start: 0, query: "" });
    assert.equal(mentionAt("mail me@host", 12), undefined);
    assert.equal(mentionAt("@a done", 7), undefined);
  });

  it("sends only the mentions still in the text", () => {
    assert.deepEqual(mentionsIn("see @src/a.ts and @b.py.", ["src/a.ts", "b.py", "c.ts"]), ["src/a.ts"]);
    assert.deepEqual(mentionsIn("@b.py", ["b.py"]), ["b.py"]);
  });

  it("ranks names starting with the query first, then names, paths, letters in order", () => {
    const files = ["src/parser.ts", "test/parser.test.ts", "docs/deep/sparse.md", "src/p/a/r.ts", "src/other.ts"];
    assert.deepEqual(rankFiles(files, "par", 10), ["src/parser.ts", "test/parser.test.ts", "docs/deep/sparse.md", "src/p/a/r.ts"]);
    assert.deepEqual(rankFiles(files, "", 2), ["src/other.ts", "src/p/a/r.ts"]); // the shortest paths
    assert.deepEqual(rankFiles(files, "zzz", 10), []);
  });
});

describe("status line", () => {
  const run = (actions: PanelAction[]): PanelState => actions.reduce(reduce, initialState());
  const base: PanelAction[] = [{ type: "connection", status: "ready" }, { type: "sessionStarted", sessionId: "s" }, { type: "turnStarted", turnId: 1, text: "t", attachments: [] }, { type: "phase", phase: "running" }];

  it("says what the turn does: the running tool, waiting for an answer, a retry's countdown", () => {
    assert.equal(statusText(run([{ type: "connection", status: "ready" }]), false, 0), "starting a session…");
    assert.equal(statusText(run(base), true, 0), "working…");
    const tool = run([...base, { type: "update", update: { sessionUpdate: "tool_call", toolCallId: "b", title: "`npm test`", kind: "execute", status: "in_progress" } }]);
    assert.equal(statusText(tool, true, 0), "running npm test");
    const waiting = reduce(tool, { type: "permissionRequested", permission: { id: "p", title: "x", toolKind: "execute", options: [], hasDiff: false } });
    assert.equal(statusText(waiting, true, 0), "waiting for your answer");
    const retry = reduce(tool, { type: "progress", text: "the API is overloaded (529); retrying in 8.0 s", at: 10_000 });
    assert.equal(statusText(retry, true, 13_500), "retrying in 5 s (the API is overloaded (529))");
    assert.equal(progressText("connection failed; retrying in 1.5 s", 0, 5000), "retrying in 0 s (connection failed)");
    const notice = { sessionUpdate: "agent_message_chunk" as const, content: { type: "text" as const, text: "> …" }, _meta: { notice: "info" as const, retry: { reason: "API overloaded", attempt: 2, attempts: 4, delayMs: 3000 } } };
    const overloaded = reduce(tool, { type: "update", update: notice });
    const at = overloaded.progress?.at ?? 0;
    assert.equal(statusText(overloaded, true, at), "API overloaded — retrying in 3 s (attempt 2/4)");
    assert.equal(statusText(overloaded, true, at + 1500), "API overloaded — retrying in 2 s (attempt 2/4)");
  });

  it("a turn's end in words, not the wire's stop reason", () => {
    assert.match(turnEndHtml("cancelled", undefined, undefined), />Stopped \(cancelled\)</);
    assert.match(turnEndHtml("max_tokens", undefined, undefined), /reached its length limit/);
    assert.match(turnEndHtml("refusal", undefined, undefined), /declined/);
    assert.match(turnEndHtml("end_turn", undefined, undefined), />Done</);
    assert.match(turnEndHtml("something_new", undefined, undefined), /Turn ended: something_new/);
  });

  it("a turn the bridge's crash cut short says so calmly, not as an error", () => {
    const html = turnEndHtml(undefined, undefined, undefined, "the bridge was killed (SIGKILL); it is being restarted and the conversation goes on.");
    assert.match(html, /class="reason interrupted">Interrupted: the bridge was killed \(SIGKILL\); it is being restarted/);
    assert.doesNotMatch(html, /error/);
  });
});

describe("sub-agent card", () => {
  type Tool = Extract<ConversationItem, { kind: "tool" }>;
  const child: Tool = { kind: "tool", id: "tool-g1", turnId: 1, toolCallId: "g1", title: "Grep `TODO`", toolKind: "search", status: "in_progress", output: Array.from({ length: 30 }, (_, i) => `line ${i}`).join("\n"), diffs: [], locations: [] };
  const agentCard = (extra: Partial<Tool>): Tool => ({ kind: "tool", id: "tool-a1", turnId: 1, toolCallId: "a1", title: "Find TODOs", toolKind: "think", status: "in_progress", output: "Running: Grep TODO", diffs: [], locations: [], ...extra });

  it("shows its type and figures, a Stop while it runs, and its work collapsed with the last step named", () => {
    const html = toolHtml(agentCard({ agent: { type: "Explore", description: "Find TODOs", status: "running", toolCalls: 1, tokens: 1200, elapsedMs: 3400 }, children: [{ kind: "agent", id: "x", turnId: 1, text: "Looking <now>" }, child] }), ctx);
    assert.match(html, /<div class="agent-meta"><span>Explore<\/span> · <span>1 tool call<\/span> · <span>1.2k tokens<\/span> · <span>3 s<\/span><button [^>]*data-action="cancelToolCall" data-tool-call="a1"/);
    assert.match(html, /<details class="subagent" data-open-key="sub-a1"><summary>1 step · Grep TODO<\/summary>/);
    assert.ok(!/<details[^>]* open/.test(html), "collapsed until opened");
    assert.match(html, /<div class="child agent-text md"><p>Looking &lt;now&gt;<\/p>/, "a sub-agent's text is markdown, rendered (issue 24 item 8)");
    assert.ok(html.includes("line 29") && !html.includes("line 10\n"), "a child's output is its tail");
  });

  it("a message rendered once is rendered again only when its text changes (the card is painted at every update)", () => {
    type Agent = Extract<ConversationItem, { kind: "agent" }>;
    const message: Agent = { kind: "agent", id: "m", turnId: 1, text: "First **bold**" };
    const card = (children: ConversationItem[]): string => toolHtml(agentCard({ agent: { type: "Explore", description: "d", status: "running" }, children }), ctx);
    assert.match(card([message]), /<p>First <strong>bold<\/strong><\/p>/);
    assert.match(card([message]), /<p>First <strong>bold<\/strong><\/p>/);
    message.text = "Then _more_"; // the same message, its text changed in place: rendered anew
    assert.match(card([message]), /<p>Then <em>more<\/em><\/p>/);
    assert.match(card([{ ...message, text: "A `copy`" }]), /<p>A <code>copy<\/code><\/p>/);
  });

  it("has no Stop once its sub-agent ended", () => {
    const html = toolHtml(agentCard({ status: "completed", agent: { type: "general-purpose", description: "d", status: "completed" }, children: [child] }), ctx);
    assert.ok(!html.includes("cancelToolCall"));
  });

  it("a permission card says which sub-agent asks", () => {
    assert.match(permissionHtml(card({ agent: "Build it" }), ctx), /<div class="perm-agent">Sub-agent “Build it” asks<\/div>/);
  });

  it("a sub-agent's own Agent card nests its work one level deeper, with its own open key", () => {
    const grandchild: Tool = { ...child, id: "tool-c1", toolCallId: "c1", title: "Glob `*`", status: "completed", output: "a.py" };
    const helper: Tool = agentCard({ id: "tool-b1", toolCallId: "b1", title: "Helper", agent: { type: "general-purpose", description: "Helper", status: "running", toolCalls: 1 }, children: [grandchild] });
    const html = toolHtml(agentCard({ agent: { type: "lead", description: "Lead", status: "running" }, children: [helper] }), ctx);
    assert.match(html, /data-open-key="sub-a1"><summary>1 step · Helper<\/summary><div class="children"><div class="child tool in_progress" data-id="tool-b1">/);
    assert.match(html, /<details class="subagent" data-open-key="sub-b1"><summary>1 step · Glob \*<\/summary>.*<div class="child tool completed" data-id="tool-c1">/s);
    assert.equal(html.match(/data-action="cancelToolCall"/g)?.length, 2, "each running sub-agent can be stopped alone");
  });

  it("names a background agent, and a stopped or failed one has no Stop and no last step", () => {
    const background = toolHtml(agentCard({ status: "completed", agent: { type: "Explore", description: "d", status: "running", background: true, toolCalls: 2 } }), ctx);
    assert.match(background, /<span>Explore<\/span> · <span>background<\/span> · <span>2 tool calls<\/span>/);
    assert.ok(background.includes("cancelToolCall"), "a background agent runs on after its call returned");
    for (const status of ["stopped", "failed"] as const) {
      const html = toolHtml(agentCard({ status: "failed", agent: { type: "Explore", description: "d", status }, children: [child] }), ctx);
      assert.ok(!html.includes("cancelToolCall"));
      assert.match(html, /<summary>1 step<\/summary>/);
    }
  });

  it("shows its task, thinking and text escaped, and nothing for an item kind that cannot nest", () => {
    const html = toolHtml(agentCard({ agent: { type: "Explore", description: "d", status: "completed" }, children: [
      { kind: "user", id: "u", turnId: 1, text: "Find <b>TODO</b>", attachments: [] },
      { kind: "thought", id: "t", turnId: 1, text: "hmm & so" },
      { kind: "notice", id: "n", text: "not a child" },
    ] }), ctx);
    assert.match(html, /<div class="child task"><span class="who">Task<\/span> Find &lt;b&gt;TODO&lt;\/b&gt;<\/div><div class="child thought-text">hmm &amp; so<\/div><\/div>/);
    assert.ok(!html.includes("not a child"));
    assert.match(html, /<summary>0 steps<\/summary>/);
  });
});

describe("cards say what happened (issue 24 items 8, 9, 12)", () => {
  type Tool = Extract<ConversationItem, { kind: "tool" }>;
  const tool = (extra: Partial<Tool>): Tool => ({ kind: "tool", id: "t", turnId: 1, toolCallId: "t", title: "`rm x`", toolKind: "execute", status: "pending", output: "", diffs: [], locations: [], ...extra });
  const base: PanelAction[] = [{ type: "sessionStarted", sessionId: "s" }, { type: "turnStarted", turnId: 1, text: "t", attachments: [] }];
  const runAll = (actions: PanelAction[]): PanelState => actions.reduce(reduce, initialState());

  it("a command the person rejected says “rejected”, not “failed”", () => {
    const s = runAll([
      ...base,
      { type: "update", update: { sessionUpdate: "tool_call", toolCallId: "b1", title: "`rm x`", kind: "execute", status: "pending" } },
      { type: "permissionRequested", permission: { id: "p1", title: "`rm x`", toolKind: "execute", toolCallId: "b1", hasDiff: false, options: [{ optionId: "r", name: "Reject", kind: "reject_once" }] } },
      { type: "permissionSettled", id: "p1", how: "answered", optionName: "Reject" },
      { type: "update", update: { sessionUpdate: "tool_call_update", toolCallId: "b1", status: "failed", content: [{ type: "content", content: { type: "text", text: "Permission denied by user" } }] } },
    ]);
    const card = s.items.find((i) => i.kind === "tool");
    assert.ok(card?.kind === "tool");
    assert.match(toolHtml(card, ctx), /<span class="badge rejected">✗ rejected<\/span>/);
    assert.doesNotMatch(toolHtml(card, ctx), /✗ failed/);
    assert.match(toolHtml(tool({ status: "failed" }), ctx), /✗ failed/, "a real failure still says so");
  });

  it("a proposed edit shows its diff once: on the question's card while it waits, on the tool card after", () => {
    const diff = { type: "diff" as const, path: "/w/a.py", oldText: "x = 1", newText: "x = 2" };
    const pending = tool({ toolKind: "edit", title: "Edit a.py", proposed: [diff], review: "proposed" });
    assert.doesNotMatch(toolHtml(pending, ctx), /class="diff"/);
    assert.match(toolHtml({ ...pending, review: "accepted" }, ctx), /<span class="review accepted">accepted<\/span>/);
  });

  it("kinds in words: an Agent card says agent, a plan tool says plan (not THINK), and a plan tool's instructions to the model are not shown", () => {
    assert.match(toolHtml(tool({ toolKind: "execute" }), ctx), /<span class="tool-kind">run<\/span>/);
    assert.match(toolHtml(tool({ toolKind: "think", agent: { type: "Explore", description: "d", status: "running" } }), ctx), /<span class="tool-kind">agent<\/span>/);
    const todos = tool({ toolKind: "think", title: "Update todos: Running tests", status: "completed", output: "Todo list updated (1/3 completed). Keep it current as you work, and go on with the task in progress." });
    assert.match(toolHtml(todos, ctx), /<span class="tool-kind">plan<\/span>/);
    assert.doesNotMatch(toolHtml(todos, ctx), /Keep it current/);
  });

  it("the offline demo model's turns cost nothing: the end line shows tokens and no price", () => {
    const s = runAll([
      ...base,
      { type: "update", update: { sessionUpdate: "usage_update", used: 1200, size: 200000, _meta: { inputTokens: 1000, outputTokens: 50, offline: true } } },
      { type: "turnEnded", turnId: 1, stopReason: "end_turn" },
    ]);
    const end = s.items.find((i) => i.kind === "turnEnd");
    assert.ok(end?.kind === "turnEnd");
    const html = turnEndHtml(end.stopReason, end.error, end.usage);
    assert.match(html, /1\.0k in · 50 out/);
    assert.doesNotMatch(html, /\$/);
  });

  it("a turn that failed for want of a key offers to set one or to try offline", () => {
    const s = runAll([...base, { type: "turnEnded", turnId: 1, error: "No Anthropic API key is set: …", code: -32000 }]);
    const end = s.items.find((i) => i.kind === "turnEnd");
    assert.ok(end?.kind === "turnEnd" && end.needsKey === true);
    const html = turnEndHtml(end.stopReason, end.error, end.usage, end.interrupted, end.needsKey);
    assert.match(html, /No API key/);
    assert.match(html, /data-command="agentBridge\.setApiKey">Set API key<\/button>/);
    assert.match(html, /data-command="agentBridge\.tryOffline">Try it offline<\/button>/);
  });
});
