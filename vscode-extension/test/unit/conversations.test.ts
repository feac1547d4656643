/**
 * The conversations as the panel's host runs them (src/conversations.ts, src/conversation.ts: no `vscode`),
 * against a fake bridge connection the test plays: sending mid-stream, a bridge killed mid-tool, a crash loop's
 * messages, a resumed session's model, and two conversations at once.
 */
import assert from "node:assert/strict";
import { beforeEach, describe, it } from "node:test";
import type { ConversationHost } from "../../src/conversation";
import { Conversations } from "../../src/conversations";
import type { ConversationItem, PanelState } from "../../src/panel/state";
import { PermissionRequests } from "../../src/permissionRequests";
import type { Pickers } from "../../src/pickers";
import { Method, type RequestPermissionParams, type SessionUpdate } from "../../src/protocol";
import { FakeConnection } from "../fakeConnection";

const modes = { currentModeId: "default", availableModes: [{ id: "default", name: "Default" }] };
const models = { currentModelId: "claude-sonnet-4-5", availableModels: [{ modelId: "claude-sonnet-4-5", name: "Claude Sonnet 4.5" }, { modelId: "claude-opus-4-5", name: "Claude Opus 4.5" }] };
const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

function fakeHost(remembered: Record<string, string> = {}): ConversationHost & { lines: string[] } {
  const lines: string[] = [];
  const pickers: Pickers = {
    pickMode: () => Promise.resolve(undefined),
    confirmBypass: () => Promise.resolve(false),
    pickModel: () => Promise.resolve(undefined),
    pickStoredSession: (stored) => Promise.resolve(stored[0]?.sessionId),
  };
  return {
    lines,
    cwd: () => "/work",
    mcpServers: () => [],
    defaultModel: () => undefined,
    selection: () => undefined,
    rememberModel: (sessionId, model) => (remembered[sessionId] = model),
    rememberedModel: (sessionId) => remembered[sessionId],
    log: { info: (m) => lines.push(m), warn: (m) => lines.push(m), error: (m) => lines.push(m) },
    pickers,
  };
}

const say = (sessionId: string, text: string): { sessionId: string; update: SessionUpdate } => ({ sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } } });
const texts = (state: PanelState, kind: ConversationItem["kind"]): [number, string][] =>
  state.items.flatMap((i) => (i.kind === kind && "text" in i && "turnId" in i ? [[i.turnId, i.text] as [number, string]] : []));

describe("conversations", () => {
  let conn: FakeConnection;
  let permissions: PermissionRequests;
  let host: ReturnType<typeof fakeHost>;
  let conversations: Conversations;
  let n: number;
  let closed: unknown[];

  beforeEach(async () => {
    conn = new FakeConnection();
    n = 0;
    conn.autoAnswer.set(Method.sessionNew, () => ({ sessionId: `s${++n}`, modes, models }));
    conn.autoAnswer.set(Method.sessionSetModel, () => ({}));
    closed = [];
    conn.autoAnswer.set(Method.sessionClose, (params) => (closed.push(params), {}));
    permissions = new PermissionRequests();
    host = fakeHost();
    conversations = new Conversations(permissions, host);
    await conversations.attach(conn, { resume: false });
  });

  it("a message sent while an answer streams: the old turn's last chunk stays in the old answer, the new one renders as its own (issue 24 item 1)", async () => {
    const tab = conversations.active;
    tab.submit("write code", false);
    conn.notify(Method.sessionUpdate, say("s1", "Here:\n\n```py\nprint(1)\n"));
    tab.submit("stop, do this instead", false);
    // The bridge flushes what the interrupted turn had streamed before it answers that turn…
    conn.notify(Method.sessionUpdate, say("s1", "print(2)\n"));
    const [first, second] = conn.pending(Method.sessionPrompt);
    first?.resolve({ stopReason: "cancelled" });
    await settle();
    // …and only then the new turn streams.
    conn.notify(Method.sessionUpdate, say("s1", "**Done** as asked."));
    second?.resolve({ stopReason: "end_turn" });
    await settle();
    const state = tab.store.state;
    assert.deepEqual(texts(state, "agent"), [
      [1, "Here:\n\n```py\nprint(1)\nprint(2)\n"],
      [2, "**Done** as asked."],
    ]);
    assert.deepEqual(
      state.items.map((i) => `${i.kind}${"turnId" in i ? i.turnId : ""}`),
      ["user1", "agent1", "turnEnd1", "user2", "agent2", "turnEnd2"],
    );
  });

  it("kill -9 while a tool runs: its card does not stay running; it says the turn was interrupted (issue 24 item 4)", async () => {
    const tab = conversations.active;
    tab.submit("run: sleep 30", false);
    conn.notify(Method.sessionUpdate, { sessionId: "s1", update: { sessionUpdate: "tool_call", toolCallId: "b1", title: "`sleep 30`", kind: "execute", status: "pending" } });
    conn.notify(Method.sessionUpdate, { sessionId: "s1", update: { sessionUpdate: "tool_call_update", toolCallId: "b1", status: "in_progress" } });
    conn.pending(Method.sessionPrompt)[0]?.reject(new Error("Connection got disposed."));
    await settle();
    conversations.crashed("was killed (SIGKILL)", { inMs: 500, attempt: 1, of: 4 });
    await settle();
    const card = tab.store.state.items.find((i) => i.kind === "tool");
    assert.ok(card?.kind === "tool");
    assert.equal(card.status, "failed");
    assert.equal(card.cutOff, "interrupted");
    const end = tab.store.state.items.find((i) => i.kind === "turnEnd");
    assert.match(end?.kind === "turnEnd" ? (end.interrupted ?? "") : "", /killed \(SIGKILL\)/);
  });

  it("a crash loop: one line says how the bridge stands, nothing contradicts it, no library words leak (issue 24 item 5)", async () => {
    const tab = conversations.active;
    tab.submit("hello", false);
    conn.pending(Method.sessionPrompt)[0]?.resolve({ stopReason: "end_turn" });
    await settle();
    for (let attempt = 1; attempt <= 4; attempt++) {
      conversations.crashed("exited with code 1: boom", { inMs: 500, attempt, of: 4 });
      // The bridge comes back and dies before the session is reloaded.
      const again = new FakeConnection();
      const attaching = conversations.attach(again, { resume: true, notice: "The bridge is back; the conversation goes on." });
      again.pending(Method.sessionLoad)[0]?.reject(new Error("Pending response rejected since connection got disposed"));
      await attaching;
    }
    conversations.crashed("exited with code 1: boom", undefined);
    const notices = tab.store.state.items.filter((i) => i.kind === "notice").map((i) => ("text" in i ? i.text : ""));
    assert.equal(notices.length, 1, `one line, updated: ${JSON.stringify(notices)}`);
    assert.match(notices[0] ?? "", /exited with code 1: boom; it stopped too often in a row and is not restarted again/);
    const everything = JSON.stringify(tab.store.state.items);
    assert.doesNotMatch(everything, /panel is cleared|Pending response|connection got disposed|Client is not running/i);
    assert.deepEqual(texts(tab.store.state, "user"), [[1, "hello"]], "the conversation is still there");
  });

  it("a session that cannot be reloaded: a new one goes on below and the messages above stay, as the notice says", async () => {
    const tab = conversations.active;
    tab.submit("hello", false);
    conn.pending(Method.sessionPrompt)[0]?.resolve({ stopReason: "end_turn" });
    await settle();
    conversations.crashed("was killed (SIGKILL)", { inMs: 500, attempt: 1, of: 4 });
    const again = new FakeConnection();
    again.autoAnswer.set(Method.sessionNew, () => ({ sessionId: "fresh", modes, models }));
    const attaching = conversations.attach(again, { resume: true });
    again.pending(Method.sessionLoad)[0]?.reject(new Error("Unknown session: s1"));
    await attaching;
    const notice = [...tab.store.state.items].reverse().find((i) => i.kind === "notice");
    assert.match(notice?.kind === "notice" ? notice.text : "", /a new session goes on below, the messages above stay/);
    assert.deepEqual(texts(tab.store.state, "user"), [[1, "hello"]]);
    assert.equal(tab.sessionId, "fresh");
  });

  it("a resumed session goes on with the model it ran, not the default (issue 24 item 11)", async () => {
    await conversations.active.selectModel(); // dismissed: nothing changes
    const remembered = fakeHost({ "old-1": "claude-opus-4-5" });
    const resumed = new Conversations(new PermissionRequests(), remembered);
    const c = new FakeConnection();
    c.autoAnswer.set(Method.sessionNew, () => ({ sessionId: "new-1", modes, models }));
    c.autoAnswer.set(Method.sessionList, () => ({ sessions: [{ sessionId: "old-1", cwd: "/work", title: "refactor" }] }));
    const setModel: unknown[] = [];
    c.autoAnswer.set(Method.sessionSetModel, (params) => (setModel.push(params), {}));
    await resumed.attach(c, { resume: false });
    const opening = resumed.resume();
    await settle();
    c.pending(Method.sessionLoad)[0]?.resolve({ modes, models });
    await opening;
    assert.deepEqual(setModel, [{ sessionId: "old-1", modelId: "claude-opus-4-5" }]);
    assert.equal(resumed.active.sessionState.modelId, "claude-opus-4-5");
    assert.equal(resumed.active.sessionState.model, "Claude Opus 4.5", "the header shows its name");
    assert.equal(resumed.active.title, "refactor");
  });

  it("a restart onto the offline demo model keeps its model, and back onto Claude does not carry the demo's (issue 24 item 9)", async () => {
    const tab = conversations.active;
    tab.submit("hello", false);
    conn.pending(Method.sessionPrompt)[0]?.resolve({ stopReason: "end_turn" });
    await settle();
    const offline = { currentModelId: "offline-demo", availableModels: [{ modelId: "offline-demo", name: "Offline demo model" }] };
    // "Try it offline": the bridge restarts on the demo model and reloads the session.
    const demo = new FakeConnection();
    demo.autoAnswer.set(Method.sessionSetMode, () => ({}));
    const setOnDemo: unknown[] = [];
    demo.autoAnswer.set(Method.sessionSetModel, (params) => (setOnDemo.push(params), {}));
    let attaching = conversations.attach(demo, { resume: true, notice: "Settings changed: the bridge restarted with them; the conversation goes on." });
    await settle();
    demo.pending(Method.sessionLoad)[0]?.resolve({ modes, models: offline });
    await attaching;
    assert.deepEqual(setOnDemo, [], "no Claude model is put on the demo bridge");
    assert.equal(tab.sessionState.modelId, "offline-demo");
    assert.equal(tab.sessionState.model, "Offline demo model", "the header says so");
    // A key set: back on Claude, the session goes on with the bridge's model, not "offline-demo".
    const claude = new FakeConnection();
    claude.autoAnswer.set(Method.sessionSetMode, () => ({}));
    const setOnClaude: unknown[] = [];
    claude.autoAnswer.set(Method.sessionSetModel, (params) => (setOnClaude.push(params), {}));
    attaching = conversations.attach(claude, { resume: true, notice: "Settings changed: the bridge restarted with them; the conversation goes on." });
    await settle();
    claude.pending(Method.sessionLoad)[0]?.resolve({ modes, models });
    await attaching;
    assert.deepEqual(setOnClaude, [], "the demo model is not put on a Claude bridge");
    assert.equal(tab.sessionState.modelId, "claude-sonnet-4-5");
    // And a Claude model chosen before is put back on Claude as before.
    host.pickers.pickModel = () => Promise.resolve("claude-opus-4-5");
    claude.autoAnswer.set(Method.sessionSetModel, () => ({}));
    await tab.selectModel();
    const again = new FakeConnection();
    again.autoAnswer.set(Method.sessionSetMode, () => ({}));
    const setAgain: unknown[] = [];
    again.autoAnswer.set(Method.sessionSetModel, (params) => (setAgain.push(params), {}));
    attaching = conversations.attach(again, { resume: true });
    await settle();
    again.pending(Method.sessionLoad)[0]?.resolve({ modes, models });
    await attaching;
    assert.deepEqual(setAgain, [{ sessionId: "s1", modelId: "claude-opus-4-5" }]);
  });

  it("a settings restart before the first message keeps the welcome: no notice in an empty conversation; a trust restart still says so", async () => {
    const tab = conversations.active;
    const restart = async (opts: { notice: string; noticeIfBlank?: boolean }): Promise<FakeConnection> => {
      const next = new FakeConnection();
      next.autoAnswer.set(Method.sessionSetMode, () => ({}));
      next.autoAnswer.set(Method.sessionSetModel, () => ({}));
      const attaching = conversations.attach(next, { resume: true, ...opts });
      await settle();
      next.pending(Method.sessionLoad)[0]?.resolve({ modes, models });
      await attaching;
      return next;
    };
    await restart({ notice: "Settings changed: the bridge restarted with them; the conversation goes on.", noticeIfBlank: false });
    assert.equal(tab.store.state.items.length, 0, "the welcome stays");
    const trusted = await restart({ notice: "This folder is trusted now: the bridge restarted with its own configuration; the conversation goes on.", noticeIfBlank: true });
    assert.equal(tab.store.state.items.filter((i) => i.kind === "notice").length, 1);
    tab.submit("hello", false);
    trusted.pending(Method.sessionPrompt)[0]?.resolve({ stopReason: "end_turn" });
    await settle();
    await restart({ notice: "Settings changed: the bridge restarted with them; the conversation goes on.", noticeIfBlank: false });
    assert.match(JSON.stringify(tab.store.state.items.at(-1)), /Settings changed/, "once there is a conversation, it says it goes on");
  });

  it("two conversations at once: each has its own session and turn; switching does not stop the other; a question goes to its own tab", async () => {
    const first = conversations.active;
    first.submit("long task", false);
    conn.notify(Method.sessionUpdate, say("s1", "working on it"));
    const second = await conversations.open();
    assert.notEqual(second, first);
    assert.equal(conversations.active, second);
    assert.equal(second.sessionId, "s2");
    second.submit("quick question", false);
    conn.notify(Method.sessionUpdate, say("s2", "quick answer"));
    // The first tab's turn goes on unseen and asks something.
    conn.notify(Method.sessionUpdate, say("s1", " still"));
    const params: RequestPermissionParams = { sessionId: "s1", toolCall: { toolCallId: "t1", title: "`npm test`", kind: "execute" }, options: [{ optionId: "y", name: "Allow once", kind: "allow_once" }] };
    const asked = conn.request(Method.requestPermission, params);
    assert.deepEqual(texts(first.store.state, "agent"), [[1, "working on it still"]]);
    assert.deepEqual(texts(second.store.state, "agent"), [[1, "quick answer"]]);
    assert.equal(first.store.state.items.filter((i) => i.kind === "permission").length, 1);
    assert.equal(second.store.state.items.filter((i) => i.kind === "permission").length, 0);
    assert.deepEqual(
      conversations.tabInfo().map((t) => [t.id, t.active, t.phase, t.waiting]),
      [
        [first.id, false, "running", true],
        [second.id, true, "running", false],
      ],
    );
    conversations.switchTo(first.id);
    assert.equal(conversations.active, first);
    assert.equal(second.phase, "running", "switching stops nothing");
    const [pending] = permissions.all();
    permissions.answer(pending?.id ?? "", "y");
    assert.deepEqual(await asked.result, { outcome: { outcome: "selected", optionId: "y" } });
    // Closing a tab cancels its turn and lets the bridge go of its session.
    conversations.close(second.id);
    assert.deepEqual(conversations.tabInfo().map((t) => t.id), [first.id]);
    assert.ok(conn.notifications.some((x) => x.method === Method.sessionCancel && (x.params as { sessionId: string }).sessionId === "s2"));
    assert.deepEqual(closed, [{ sessionId: "s2" }]);
  });
});
