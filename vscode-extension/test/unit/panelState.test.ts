import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type ConversationItem, initialState, type PanelAction, type PanelState, type PermissionCardData, permissionCard, reduce } from "../../src/panel/state";
import type { SessionUpdate } from "../../src/protocol";

const run = (actions: PanelAction[], from: PanelState = initialState()): PanelState => actions.reduce(reduce, from);
const update = (u: SessionUpdate): PanelAction => ({ type: "update", update: u });
const text = (kind: "agent_message_chunk" | "agent_thought_chunk", t: string): PanelAction =>
  update({ sessionUpdate: kind, content: { type: "text", text: t } });
const started: PanelAction[] = [
  { type: "sessionStarted", sessionId: "s1", modes: { currentModeId: "default", availableModes: [{ id: "default", name: "Default" }] } },
  { type: "turnStarted", turnId: 1, text: "hi", attachments: ["a.py:1-3"] },
];

describe("panel state reducer", () => {
  it("coalesces streamed chunks into one message; thinking is its own item", () => {
    const s = run([...started, text("agent_thought_chunk", "hmm "), text("agent_thought_chunk", "ok"), text("agent_message_chunk", "Hel"), text("agent_message_chunk", "lo")]);
    assert.deepEqual(
      s.items.map((i) => [i.kind, "text" in i ? i.text : ""]),
      [["user", "hi"], ["thought", "hmm ok"], ["agent", "Hello"]],
    );
  });

  it("keeps unchanged items identical (the webview re-renders only what changed)", () => {
    const a = run([...started, text("agent_message_chunk", "x")]);
    const b = reduce(a, text("agent_message_chunk", "y"));
    assert.equal(a.items[0], b.items[0]);
    assert.notEqual(a.items[1], b.items[1]);
  });

  it("tool card: title, status, streamed output replaced by each update, diffs", () => {
    const s = run([
      ...started,
      update({ sessionUpdate: "tool_call", toolCallId: "t1", title: "sleep 1; echo hi", kind: "execute", status: "pending", rawInput: { command: "echo hi" } }),
      update({ sessionUpdate: "tool_call_update", toolCallId: "t1", status: "in_progress", content: [{ type: "content", content: { type: "text", text: "line1" } }] }),
      update({ sessionUpdate: "tool_call_update", toolCallId: "t1", content: [{ type: "content", content: { type: "text", text: "line1\nline2" } }] }),
      update({ sessionUpdate: "tool_call_update", toolCallId: "t1", status: "completed", content: [{ type: "diff", path: "/a", oldText: "1", newText: "2" }] }),
      update({ sessionUpdate: "tool_call_update", toolCallId: "unknown", status: "failed" }),
    ]);
    const tool = s.items[1];
    assert.equal(tool?.kind, "tool");
    assert.equal(tool.status, "completed");
    assert.equal(tool.title, "sleep 1; echo hi");
    assert.deepEqual(tool.diffs, [{ type: "diff", path: "/a", oldText: "1", newText: "2" }]);
    assert.equal(s.items.length, 2);
  });

  it("a permission card appears, records the answer, or disappears when withdrawn", () => {
    const card = { title: "Bash: ls", toolKind: "execute" as const, options: [{ optionId: "y", name: "Allow", kind: "allow_once" as const }], hasDiff: false };
    const s = run([
      ...started,
      { type: "permissionRequested", permission: { id: "p1", ...card } },
      { type: "permissionRequested", permission: { id: "p2", ...card } },
      { type: "permissionSettled", id: "p1", how: "answered", optionName: "Allow" },
      { type: "permissionSettled", id: "p2", how: "withdrawn" },
    ]);
    const perms = s.items.filter((i) => i.kind === "permission");
    assert.equal(perms.length, 1);
    assert.equal(perms[0]?.kind === "permission" ? perms[0].answer : "", "Allow");
  });

  it("a turn ending drops its unanswered cards and records the stop reason", () => {
    const card = { id: "p1", title: "Bash", toolKind: "execute" as const, options: [], hasDiff: false };
    const s = run([...started, { type: "permissionRequested", permission: card }, { type: "turnEnded", turnId: 1, stopReason: "cancelled" }]);
    assert.deepEqual(s.items.map((i) => i.kind), ["user", "turnEnd"]);
    const end = s.items[1];
    assert.equal(end?.kind === "turnEnd" ? end.stopReason : "", "cancelled");
  });

  it("usage per turn: tokens summed over responses, cost as the session total's increase", () => {
    const usage = (amount: number, inputTokens: number): PanelAction =>
      update({ sessionUpdate: "usage_update", used: 5000, size: 200000, cost: { amount, currency: "USD" }, _meta: { inputTokens, outputTokens: 10 } });
    const s = run([
      ...started,
      usage(0.01, 100),
      { type: "turnEnded", turnId: 1, stopReason: "end_turn" },
      { type: "turnStarted", turnId: 2, text: "again", attachments: [] },
      usage(0.015, 200),
      usage(0.02, 300),
      { type: "turnEnded", turnId: 2, stopReason: "end_turn" },
    ]);
    const ends = s.items.flatMap((i) => (i.kind === "turnEnd" ? [i.usage] : []));
    assert.equal(ends[0]?.inputTokens, 100);
    assert.equal(ends[1]?.inputTokens, 500);
    assert.equal(ends[1].outputTokens, 20);
    assert.ok(Math.abs((ends[1].cost ?? 0) - 0.01) < 1e-9);
    assert.equal(ends[1].contextSize, 200000);
  });

  it("a session total that begins again (a restarted bridge) never makes a turn's cost negative", () => {
    const usage = (amount: number): PanelAction =>
      update({ sessionUpdate: "usage_update", cost: { amount, currency: "USD" }, _meta: { inputTokens: 1, outputTokens: 1 } });
    const s = run([
      ...started,
      usage(0.03),
      { type: "turnEnded", turnId: 1, stopReason: "end_turn" },
      { type: "turnStarted", turnId: 2, text: "after the crash", attachments: [] },
      usage(0.002),
      { type: "turnEnded", turnId: 2, stopReason: "end_turn" },
    ]);
    const ends = s.items.flatMap((i) => (i.kind === "turnEnd" ? [i.usage] : []));
    assert.ok(Math.abs((ends[1]?.cost ?? -1) - 0.002) < 1e-9, String(ends[1]?.cost));
  });

  it("plan, mode and commands updates replace their lists", () => {
    const s = run([
      ...started,
      update({ sessionUpdate: "plan", entries: [{ content: "write tests", status: "in_progress", priority: "high" }] }),
      update({ sessionUpdate: "current_mode_update", currentModeId: "plan" }),
      update({ sessionUpdate: "available_commands_update", availableCommands: [{ name: "compact" }] }),
    ]);
    assert.equal(s.plan[0]?.content, "write tests");
    assert.equal(s.modes?.currentModeId, "plan");
    assert.equal(s.commands[0]?.name, "compact");
  });

  it("a new session clears the conversation but keeps the connection state", () => {
    const s = run([{ type: "connection", status: "ready" }, ...started, text("agent_message_chunk", "x"), { type: "sessionStarted", sessionId: "s2" }]);
    assert.equal(s.items.length, 0);
    assert.equal(s.sessionId, "s2");
    assert.equal(s.connection.status, "ready");
  });
});

describe("panel state: reviews, destructive requests, interruptions", () => {
  const editCard = (id: string, extra: Partial<PermissionCardData> = {}): PanelAction => ({
    type: "permissionRequested",
    permission: {
      id,
      title: "Edit a.py",
      toolKind: "edit",
      toolCallId: "e1",
      hasDiff: true,
      diffs: [{ type: "diff", path: "/w/a.py", oldText: "1", newText: "2" }],
      options: [
        { optionId: "allow_once", name: "Allow once", kind: "allow_once" },
        { optionId: "reject_once", name: "Reject", kind: "reject_once" },
      ],
      ...extra,
    },
  });
  const editCall = update({ sessionUpdate: "tool_call", toolCallId: "e1", title: "Edit a.py", kind: "edit", status: "pending", locations: [{ path: "/w/a.py", line: 3 }] });

  it("a pending edit's tool card carries the proposed diff; a rejected one keeps it, marked rejected", () => {
    const s = run([
      ...started,
      editCall,
      editCard("p1"),
      { type: "permissionSettled", id: "p1", how: "answered", optionName: "Reject" },
      update({ sessionUpdate: "tool_call_update", toolCallId: "e1", status: "failed", content: [{ type: "content", content: { type: "text", text: "Permission denied by user" } }] }),
    ]);
    const tool = s.items.find((i) => i.kind === "tool");
    assert.equal(tool?.kind, "tool");
    assert.equal(tool.review, "rejected");
    assert.equal(tool.proposed?.[0]?.newText, "2");
    assert.deepEqual(tool.locations, [{ path: "/w/a.py", line: 3 }]);
    const card = s.items.find((i) => i.kind === "permission");
    assert.equal(card?.kind === "permission" ? card.answerKind : "", "reject_once");
  });

  it("an accepted edit is marked accepted until the tool reports what it wrote", () => {
    const s = run([...started, editCall, editCard("p1"), { type: "permissionSettled", id: "p1", how: "answered", optionName: "Allow once" }]);
    const tool = s.items.find((i) => i.kind === "tool");
    assert.equal(tool?.kind === "tool" ? tool.review : "", "accepted");
  });

  it("permissionCard takes the request's diffs; destructive is the tool's word (_meta.destructive), not a guess from the command", () => {
    const ask = (id: string, command: string, meta?: { destructive: boolean }): PermissionCardData =>
      permissionCard(id, { sessionId: "s", toolCall: { toolCallId: `t-${id}`, title: command, kind: "execute", rawInput: { command }, ...(meta ? { _meta: meta } : {}) }, options: [] });
    const card = ask("p9", "rm -rf build", { destructive: true });
    assert.equal(card.toolCallId, "t-p9");
    const destructive = (s: PanelState): boolean[] => s.items.flatMap((i) => (i.kind === "permission" ? [i.destructive] : []));
    assert.deepEqual(destructive(run([...started, { type: "permissionRequested", permission: card }])), [true]);
    // No word from the tool: not destructive, whatever the words of the command.
    assert.deepEqual(destructive(run([...started, { type: "permissionRequested", permission: ask("p8", "rm -rf build") }])), [false]);
    // The word on the tool call's card (the tool_call update) counts too; a delete tool always is.
    const onCard = update({ sessionUpdate: "tool_call", toolCallId: "t-p7", title: "x", kind: "execute", status: "pending", _meta: { destructive: true } });
    assert.deepEqual(destructive(run([...started, onCard, { type: "permissionRequested", permission: ask("p7", "x") }])), [true]);
    const del: PermissionCardData = { id: "p6", title: "Delete a", toolKind: "delete", options: [], hasDiff: false };
    assert.deepEqual(destructive(run([...started, { type: "permissionRequested", permission: del }])), [true]);
  });

  it("an interrupted turn's end goes above the message that interrupted it", () => {
    const s = run([...started, text("agent_message_chunk", "part"), { type: "turnStarted", turnId: 2, text: "stop, do this", attachments: [] }, { type: "turnEnded", turnId: 1, stopReason: "cancelled" }]);
    assert.deepEqual(s.items.map((i) => i.id), ["user-1", "agent-1-1", "end-1", "user-2"]);
  });

  it("a crash reload keeps the conversation (sessionStarted keep); a lost connection forgets the session", () => {
    const s1 = run([{ type: "connection", status: "ready" }, ...started, text("agent_message_chunk", "x"), { type: "connection", status: "starting" }]);
    assert.equal(s1.sessionId, undefined);
    const s2 = run([{ type: "connection", status: "ready" }, { type: "sessionStarted", sessionId: "s1", keep: true }], s1);
    assert.equal(s2.sessionId, "s1");
    assert.equal(s2.items.length, 2);
  });

  it("a retry note lasts until the stream moves on or the turn ends", () => {
    const noted = run([...started, { type: "progress", text: "overloaded; retrying in 4.0 s", at: 1000 }]);
    assert.equal(noted.progress?.text, "overloaded; retrying in 4.0 s");
    assert.equal(reduce(noted, text("agent_message_chunk", "ok")).progress, undefined);
    assert.equal(reduce(noted, { type: "turnEnded", turnId: 1, stopReason: "end_turn" }).progress, undefined);
    assert.notEqual(reduce(noted, update({ sessionUpdate: "usage_update", used: 1 })).progress, undefined);
  });

  it("a retry notice is the status's countdown while the turn waits, not text of the answer", () => {
    const retry = { reason: "API overloaded", attempt: 2, attempts: 4, delayMs: 3000 };
    const notice = update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "\n\n> API overloaded — retrying in 3 s (attempt 2/4)\n\n" }, _meta: { notice: "info", retry } });
    const waiting = run([...started, notice]);
    assert.deepEqual(waiting.progress?.retry, retry);
    assert.equal(waiting.progress.text, "API overloaded — retrying in 3 s (attempt 2/4)");
    assert.deepEqual(waiting.items.map((i) => i.kind), ["user"], "nothing is added to the conversation");
    const answered = reduce(waiting, text("agent_message_chunk", "ok"));
    assert.equal(answered.progress, undefined);
    assert.deepEqual(answered.items.map((i) => [i.kind, "text" in i ? i.text : ""]), [["user", "hi"], ["agent", "ok"]]);
  });

  it("a replay: each prompt is its own bubble and turn, ended as the bridge says, with its usage", () => {
    const end = (stopReason: "end_turn" | null, extra: Record<string, unknown> = {}): { turnEnd: { stopReason: "end_turn" | null; cutOff?: boolean } } => ({ turnEnd: { stopReason, ...extra } });
    const s = run([
      { type: "sessionStarted", sessionId: "s1" },
      update({ sessionUpdate: "user_message_chunk", content: { type: "text", text: "hello" } }),
      update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hi there" } }),
      update({ sessionUpdate: "usage_update", used: 500, size: 1000, cost: { amount: 0.25, currency: "USD" }, _meta: { inputTokens: 400, outputTokens: 100, ...end("end_turn") } }),
      update({ sessionUpdate: "user_message_chunk", content: { type: "text", text: "long" }, _meta: end(null, { cutOff: true }) }),
      update({ sessionUpdate: "user_message_chunk", content: { type: "text", text: "still there after the crash?" } }),
      update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "yes" } }),
      update({ sessionUpdate: "usage_update", used: 600, size: 1000, cost: { amount: 0.5, currency: "USD" }, _meta: { inputTokens: 500, outputTokens: 100, ...end("end_turn") } }),
    ]);
    assert.deepEqual(
      s.items.map((i) => [i.kind, "text" in i ? i.text : i.kind === "turnEnd" ? (i.stopReason ?? i.interrupted) : "", "turnId" in i ? i.turnId : 0]),
      [
        ["user", "hello", 1],
        ["agent", "hi there", 1],
        ["turnEnd", "end_turn", 1],
        ["user", "long", 2],
        ["turnEnd", "the bridge stopped before this turn ended", 2],
        ["user", "still there after the crash?", 3],
        ["agent", "yes", 3],
        ["turnEnd", "end_turn", 3],
      ],
    );
    const ends = s.items.filter((i) => i.kind === "turnEnd");
    assert.deepEqual(ends.map((i) => i.usage?.cost), [0.25, undefined, 0.25], "each turn's cost from the session totals");
    assert.equal(ends[2]?.usage?.outputTokens, 100);
    assert.equal(ends[1]?.error, undefined, "an interrupted turn is not an error");
    assert.equal(s.currentTurn, 3, "the next live turn comes after the replayed ones");
    assert.deepEqual(s.turns, {}, "no turn is left open");
  });

  it("attachments given as labels or with their file", () => {
    const s = run([{ type: "sessionStarted", sessionId: "s" }, { type: "turnStarted", turnId: 1, text: "t", attachments: ["x.py", { label: "a.py:3-4", path: "/w/a.py", line: 3 }] }]);
    const user = s.items[0];
    assert.deepEqual(user?.kind === "user" ? user.attachments : [], [{ label: "x.py" }, { label: "a.py:3-4", path: "/w/a.py", line: 3 }]);
  });
});

describe("sub-agents in the panel", () => {
  const nested = (parent: string, u: Record<string, unknown>): PanelAction =>
    update({ ...u, _meta: { parentToolCallId: parent } } as unknown as SessionUpdate);
  const agentCard = update({ sessionUpdate: "tool_call", toolCallId: "a1", title: "Find TODOs", kind: "think", status: "pending", rawInput: { prompt: "p" } });

  it("a sub-agent's calls and text go under its Agent card, in order, not into the log", () => {
    const s = run([
      ...started,
      agentCard,
      nested("a1", { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Look" } }),
      nested("a1", { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "ing." } }),
      nested("a1", { sessionUpdate: "tool_call", toolCallId: "g1", title: "Grep TODO", kind: "search", status: "pending" }),
      text("agent_message_chunk", "The parent's own words."),
      nested("a1", { sessionUpdate: "tool_call_update", toolCallId: "g1", status: "completed", content: [{ type: "content", content: { type: "text", text: "3 hits" } }] }),
      update({ sessionUpdate: "tool_call_update", toolCallId: "a1", content: [{ type: "content", content: { type: "text", text: "Running: Grep TODO" } }], _meta: { agent: { type: "Explore", description: "Find TODOs", status: "running", toolCalls: 1, tokens: 1200, elapsedMs: 3000 } } }),
    ]);
    assert.deepEqual(s.items.map((i) => i.kind), ["user", "tool", "agent"]);
    const card = s.items[1];
    assert.ok(card?.kind === "tool");
    assert.equal(card.agent?.type, "Explore");
    assert.equal(card.output, "Running: Grep TODO");
    assert.deepEqual(card.children?.map((c) => [c.kind, c.kind === "tool" ? `${c.title}: ${c.status} ${c.output}` : "text" in c ? c.text : ""]), [
      ["agent", "Looking."],
      ["tool", "Grep TODO: completed 3 hits"],
    ]);
    assert.equal(s.items[2]?.kind === "agent" ? s.items[2].text : "", "The parent's own words.");
  });

  it("a deeper sub-agent nests under its own card, and its parent's card changes identity so it re-renders", () => {
    const before = run([...started, agentCard, nested("a1", { sessionUpdate: "tool_call", toolCallId: "b1", title: "Helper", kind: "think", status: "pending" })]);
    const after = reduce(before, nested("b1", { sessionUpdate: "tool_call", toolCallId: "c1", title: "Glob *", kind: "search", status: "pending" }));
    const top = after.items[1];
    assert.ok(top?.kind === "tool" && before.items[1] !== top && before.items[0] === after.items[0]);
    const helper = top.children?.[0];
    assert.ok(helper?.kind === "tool" && helper.toolCallId === "b1");
    assert.deepEqual(helper.children?.map((c) => c.kind === "tool" && c.toolCallId), ["c1"]);
  });

  it("an update whose parent card is not there is shown, not lost", () => {
    const s = run([...started, nested("zz", { sessionUpdate: "tool_call", toolCallId: "x1", title: "Read a", kind: "read", status: "pending" })]);
    assert.deepEqual(s.items.map((i) => i.kind), ["user", "tool"]);
  });

  it("a sub-agent's permission card names it", () => {
    const card = permissionCard("p1", { sessionId: "s1", toolCall: { toolCallId: "g1", title: "`make`", kind: "execute", rawInput: { command: "make" } }, options: [], _meta: { agent: { type: "general-purpose", description: "Build it", parentToolCallId: "a1" } } });
    assert.equal(card.agent, "Build it");
  });

  it("two sub-agents running at once each keep their own work; their text never joins the parent's", () => {
    const s = run([
      ...started,
      agentCard,
      update({ sessionUpdate: "tool_call", toolCallId: "a2", title: "Job B", kind: "think", status: "pending" }),
      nested("a1", { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "A " } }),
      nested("a2", { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "B " } }),
      nested("a1", { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "runs" } }),
      nested("a2", { sessionUpdate: "tool_call", toolCallId: "x", title: "sleep", kind: "execute", status: "in_progress" }),
      nested("a1", { sessionUpdate: "tool_call", toolCallId: "y", title: "sleep", kind: "execute", status: "in_progress" }),
      nested("a2", { sessionUpdate: "tool_call_update", toolCallId: "x", status: "failed" }),
      text("agent_message_chunk", "Both stopped."),
    ]);
    const [a, b] = [s.items[1], s.items[2]];
    assert.ok(a?.kind === "tool" && b?.kind === "tool");
    const summary = (c: ConversationItem) => (c.kind === "tool" ? `${c.toolCallId}:${c.status}` : "text" in c ? c.text : c.kind);
    assert.deepEqual(a.children?.map(summary), ["A runs", "y:in_progress"]);
    assert.deepEqual(b.children?.map(summary), ["B ", "x:failed"]);
    assert.deepEqual(s.items.slice(3).map(summary), ["Both stopped."]);
  });

  it("a loaded session's replay nests each sub-agent's task and work; a re-sent Agent card keeps them", () => {
    const replay = run([
      { type: "sessionStarted", sessionId: "s1" },
      update({ sessionUpdate: "user_message_chunk", content: { type: "text", text: "find the TODOs" } }),
      agentCard,
      nested("a1", { sessionUpdate: "user_message_chunk", content: { type: "text", text: "Look for TODO" } }),
      nested("a1", { sessionUpdate: "tool_call", toolCallId: "g1", title: "Grep TODO", kind: "search", status: "completed" }),
      nested("a1", { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "3 found" } }),
      update({ sessionUpdate: "tool_call", toolCallId: "a1", title: "Find TODOs", kind: "think", status: "completed", content: [{ type: "content", content: { type: "text", text: "3 found" } }], _meta: { agent: { type: "Explore", description: "Find TODOs", status: "completed" } } }),
      update({ sessionUpdate: "user_message_chunk", content: { type: "text", text: "thanks" } }),
    ]);
    assert.deepEqual(replay.items.map((i) => i.kind), ["user", "tool", "user"]);
    const card = replay.items[1];
    assert.ok(card?.kind === "tool");
    assert.equal(card.status, "completed");
    const children = card.children ?? [];
    assert.deepEqual(children.map((c) => c.kind), ["user", "tool", "agent"]);
    const task = children[0];
    assert.equal(task?.kind === "user" ? task.text : "", "Look for TODO");
  });

  it("a sub-agent's edit: its proposed diff and the answer reach its nested card", () => {
    const diff = { type: "diff" as const, path: "/w/a.py", oldText: "1", newText: "2" };
    const asked = run([
      ...started,
      agentCard,
      nested("a1", { sessionUpdate: "tool_call", toolCallId: "e1", title: "Edit a.py", kind: "edit", status: "pending" }),
      { type: "permissionRequested", permission: { id: "p1", title: "Edit a.py", toolKind: "edit", options: [{ optionId: "y", name: "Allow", kind: "allow_once" }], hasDiff: true, toolCallId: "e1", diffs: [diff], agent: "Find TODOs" } },
    ]);
    const edit = (s: PanelState) => {
      const card = s.items[1];
      const child = card?.kind === "tool" ? card.children?.[0] : undefined;
      return child?.kind === "tool" ? [child.review, child.proposed?.length] : [];
    };
    assert.deepEqual(edit(asked), ["proposed", 1]);
    const perm = asked.items[2];
    assert.ok(perm?.kind === "permission" && perm.agent === "Find TODOs", "the card in the log names the sub-agent");
    assert.deepEqual(edit(reduce(asked, { type: "permissionSettled", id: "p1", how: "answered", optionName: "Allow" })), ["accepted", 1]);
  });

  it("a sub-agent's usage counts in its turn's figures; its unanswered question goes when the turn ends", () => {
    const s = run([
      ...started,
      agentCard,
      { type: "permissionRequested", permission: { id: "p1", title: "`make`", toolKind: "execute", options: [], hasDiff: false, agent: "Find TODOs" } },
      update({ sessionUpdate: "usage_update", used: 10, size: 100, _meta: { parentToolCallId: "a1", inputTokens: 7, outputTokens: 3 } } as unknown as SessionUpdate),
      { type: "turnEnded", turnId: 1, stopReason: "cancelled" },
    ]);
    assert.ok(!s.items.some((i) => i.kind === "permission"));
    const end = s.items[s.items.length - 1];
    assert.ok(end?.kind === "turnEnd");
    assert.deepEqual([end.usage?.inputTokens, end.usage?.outputTokens], [7, 3]);
  });
});
