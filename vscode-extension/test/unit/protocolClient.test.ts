import assert from "node:assert/strict";
import { beforeEach, describe, it } from "node:test";
import { AgentClient } from "../../src/agentClient";
import { PermissionRequests } from "../../src/permissionRequests";
import { mcpServersFromSettings, Method, type RequestPermissionParams, type SessionUpdate } from "../../src/protocol";
import type { AgentSession, TurnEnded, TurnPhase } from "../../src/session";
import { FakeConnection } from "../fakeConnection";

const modes = { currentModeId: "default", availableModes: [{ id: "default", name: "Default" }, { id: "plan", name: "Plan" }] };

describe("protocol client", () => {
  let conn: FakeConnection;
  let permissions: PermissionRequests;
  let client: AgentClient;
  let session: AgentSession;

  beforeEach(async () => {
    conn = new FakeConnection();
    let n = 0;
    conn.autoAnswer.set(Method.sessionNew, () => ({ sessionId: `s${++n}`, modes }));
    conn.autoAnswer.set(Method.sessionSetMode, () => null);
    permissions = new PermissionRequests();
    client = new AgentClient(conn, permissions);
    session = await client.newSession("/work");
  });

  it("creates a session with cwd and no MCP servers", () => {
    assert.equal(session.sessionId, "s1");
    assert.deepEqual(session.modes, modes);
  });

  it("passes the configured MCP servers to session/new, as ACP's stdio servers", async () => {
    const sent: unknown[] = [];
    conn.autoAnswer.set(Method.sessionNew, (params) => (sent.push(params), { sessionId: "s9", modes }));
    const servers = mcpServersFromSettings([
      { name: " files ", command: "npx", args: ["-y", "server", 3], env: { ROOT: "/w", BAD: 1 } },
      { name: "no-command" },
      "nonsense",
    ]);
    assert.deepEqual(servers, [{ name: "files", command: "npx", args: ["-y", "server"], env: [{ name: "ROOT", value: "/w" }] }]);
    await client.newSession("/work", servers);
    assert.deepEqual(sent, [{ cwd: "/work", mcpServers: servers }]);
    assert.deepEqual(mcpServersFromSettings(undefined), []);
  });

  it("routes session/update to the session it names and ignores unknown kinds", async () => {
    const other = await client.newSession("/work");
    const seen: SessionUpdate[] = [];
    session.onUpdate((u) => seen.push(u));
    const chunk = { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hi" } };
    conn.notify(Method.sessionUpdate, { sessionId: "s1", update: chunk });
    conn.notify(Method.sessionUpdate, { sessionId: other.sessionId, update: chunk });
    conn.notify(Method.sessionUpdate, { sessionId: "s1", update: { sessionUpdate: "something_new" } });
    conn.notify(Method.sessionUpdate, { nonsense: true });
    assert.deepEqual(seen, [chunk]);
  });

  it("lists the stored sessions of a folder", async () => {
    const stored = [{ sessionId: "old-1", cwd: "/work", title: "fix the tests", updatedAt: "2026-12-01T10:00:00Z" }];
    conn.autoAnswer.set(Method.sessionList, () => ({ sessions: stored }));
    assert.deepEqual(await client.listSessions("/work"), stored);
    conn.autoAnswer.set(Method.sessionList, () => null);
    assert.deepEqual(await client.listSessions("/work"), [], "a null answer is no sessions, not a crash");
  });

  it("loads a session: the replay sent before the answer reaches the session's subscribers", async () => {
    const seen: SessionUpdate[] = [];
    const loading = client.loadSession("old-1", "/work", modes, (s) => s.onUpdate((u) => seen.push(u)));
    const load = conn.requests.find((r) => r.method === Method.sessionLoad);
    assert.ok(load, "session/load was sent");
    assert.deepEqual(load.params, { sessionId: "old-1", cwd: "/work", mcpServers: [] });
    const replayed = { sessionUpdate: "user_message_chunk", content: { type: "text", text: "fix the tests" } };
    conn.notify(Method.sessionUpdate, { sessionId: "old-1", update: replayed });
    conn.notify(Method.sessionUpdate, { sessionId: "old-1", update: { sessionUpdate: "current_mode_update", currentModeId: "plan" } });
    load.resolve(null);
    const loaded = await loading;
    assert.deepEqual(seen[0], replayed);
    assert.equal(loaded.modes?.currentModeId, "plan");
  });

  it("a failed load drops the session and throws", async () => {
    const seen: SessionUpdate[] = [];
    const loading = client.loadSession("gone", "/work", modes, (s) => s.onUpdate((u) => seen.push(u)));
    conn.requests.find((r) => r.method === Method.sessionLoad)?.reject(new Error("Unknown session: gone"));
    await assert.rejects(loading, /Unknown session/);
    conn.notify(Method.sessionUpdate, { sessionId: "gone", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "late" } } });
    assert.deepEqual(seen, []);
  });

  it("runs a turn: prompt params, phases, and the stop reason", async () => {
    const phases: TurnPhase[] = [];
    session.onPhase((p) => phases.push(p));
    const done = session.prompt([{ type: "text", text: "hello" }]);
    const [req] = conn.pending(Method.sessionPrompt);
    // (issue 23) the prompt asks the bridge to name its turn: what rewind-to-here, fork and Changes take
    assert.deepEqual(req?.params, { sessionId: "s1", prompt: [{ type: "text", text: "hello" }], _meta: { turnId: true } });
    assert.equal(session.phase, "running");
    req.resolve({ stopReason: "end_turn" });
    assert.deepEqual(await done, { turnId: 1, stopReason: "end_turn" });
    assert.deepEqual(phases, ["running", "idle"]);
  });

  it("tells the turn id the bridge names in its answer, before the turn's end", async () => {
    const told: string[] = [];
    session.onTurnNamed((t) => told.push(`named ${t.turnId} ${t.bridgeTurnId}`));
    session.onTurnEnded((t) => told.push(`ended ${t.turnId}`));
    const done = session.prompt([{ type: "text", text: "hello" }]);
    conn.pending(Method.sessionPrompt)[0]?.resolve({ stopReason: "end_turn", _meta: { turnId: "turn_abc" } });
    assert.deepEqual(await done, { turnId: 1, stopReason: "end_turn" });
    assert.deepEqual(told, ["named 1 turn_abc", "ended 1"]);
  });

  it("cancels, and a second cancel while unwinding forces", async () => {
    const done = session.prompt([{ type: "text", text: "long" }]);
    assert.equal(session.cancel(), "cancel");
    assert.equal(session.phase, "cancelling");
    assert.equal(session.cancel(), "force");
    assert.deepEqual(conn.notifications, [
      { method: Method.sessionCancel, params: { sessionId: "s1" } },
      { method: Method.sessionCancel, params: { sessionId: "s1", _meta: { force: true } } },
    ]);
    conn.pending(Method.sessionPrompt)[0]?.resolve({ stopReason: "cancelled" });
    assert.deepEqual(await done, { turnId: 1, stopReason: "cancelled" });
    assert.equal(session.phase, "idle");
    assert.equal(session.cancel(), "idle");
    assert.equal(conn.notifications.length, 2);
  });

  it("a prompt while a turn runs is sent at once (interrupt); the turn stays running until the new one ends", async () => {
    const ended: TurnEnded[] = [];
    session.onTurnEnded((e) => ended.push(e));
    const first = session.prompt([{ type: "text", text: "one" }]);
    const second = session.prompt([{ type: "text", text: "two" }]);
    const [r1, r2] = conn.pending(Method.sessionPrompt);
    r1?.resolve({ stopReason: "cancelled" });
    await first;
    assert.equal(session.phase, "running");
    r2?.resolve({ stopReason: "end_turn" });
    await second;
    assert.equal(session.phase, "idle");
    assert.deepEqual(ended, [
      { turnId: 1, stopReason: "cancelled" },
      { turnId: 2, stopReason: "end_turn" },
    ]);
  });

  it("a failed prompt ends the turn with the error's message, not a rejection", async () => {
    const done = session.prompt([{ type: "text", text: "x" }]);
    conn.pending(Method.sessionPrompt)[0]?.reject(new Error("bad key: set ANTHROPIC_API_KEY"));
    assert.deepEqual(await done, { turnId: 1, error: "bad key: set ANTHROPIC_API_KEY" });
    assert.equal(session.phase, "idle");
  });

  it("a turn whose connection closes ends interrupted, saying how the bridge ended (not as an error)", async () => {
    const ended: TurnEnded[] = [];
    session.onTurnEnded((t) => ended.push(t));
    const turn = session.prompt([{ type: "text", text: "long" }]);
    conn.requests.at(-1)?.reject(new Error("Connection got disposed."));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(ended, [], "it waits to hear how the bridge ended");
    session.abandon("the bridge was killed (SIGKILL); it is being restarted and the conversation goes on.");
    assert.deepEqual(ended, [{ turnId: 1, interrupted: "the bridge was killed (SIGKILL); it is being restarted and the conversation goes on." }]);
    await turn;
    assert.equal(ended.length, 1, "the late rejection is not reported again");
    assert.equal(session.phase, "idle");
  });

  it("set_mode sends the mode; current_mode_update updates the session's modes", async () => {
    await session.setMode("plan");
    conn.notify(Method.sessionUpdate, { sessionId: "s1", update: { sessionUpdate: "current_mode_update", currentModeId: "plan" } });
    assert.equal(session.modes?.currentModeId, "plan");
  });

  describe("permission requests", () => {
    const params: RequestPermissionParams = {
      sessionId: "s1",
      toolCall: {
        toolCallId: "t1",
        title: "Edit a.py",
        kind: "edit",
        content: [{ type: "diff", path: "/w/a.py", oldText: "a\n", newText: "b\n" }],
      },
      options: [
        { optionId: "yes", name: "Allow once", kind: "allow_once" },
        { optionId: "always", name: "Always allow Edit(/w/**)", kind: "allow_always", _meta: { rule: "Edit(/w/**)", destination: "projectSettings" } },
        { optionId: "no", name: "Reject", kind: "reject_once" },
      ],
    };

    it("answers with the chosen option and feedback; later answers are ignored", async () => {
      const added: string[] = [];
      permissions.onAdded((p) => added.push(p.id));
      const { result } = conn.request(Method.requestPermission, params);
      const [pending] = permissions.all();
      assert.ok(pending);
      assert.equal(pending.diffs.length, 1);
      assert.deepEqual(added, [pending.id]);
      assert.equal(permissions.answer(pending.id, "no", "use a test first"), true);
      assert.equal(permissions.answer(pending.id, "yes"), false);
      assert.deepEqual(await result, { outcome: { outcome: "selected", optionId: "no" }, _meta: { feedback: "use a test first" } });
    });

    it("answers by kind (the diff editor's accept)", async () => {
      const { result } = conn.request(Method.requestPermission, params);
      const id = permissions.all()[0]?.id ?? "";
      assert.equal(permissions.answerWithKind(id, ["allow_once"]), true);
      assert.deepEqual(await result, { outcome: { outcome: "selected", optionId: "yes" } });
    });

    it("a request withdrawn by the bridge ($/cancelRequest) settles as withdrawn and answers cancelled", async () => {
      const settled: string[] = [];
      permissions.onSettled((s) => settled.push(s.how));
      const { result, cancel } = conn.request(Method.requestPermission, params);
      cancel();
      assert.deepEqual(await result, { outcome: { outcome: "cancelled" } });
      assert.deepEqual(settled, ["withdrawn"]);
      assert.equal(permissions.all().length, 0);
    });

    it("cancelAll answers every pending request cancelled (the bridge went away)", async () => {
      const a = conn.request(Method.requestPermission, params);
      const b = conn.request(Method.requestPermission, params);
      permissions.cancelAll();
      assert.deepEqual(await Promise.all([a.result, b.result]), [{ outcome: { outcome: "cancelled" } }, { outcome: { outcome: "cancelled" } }]);
    });
  });
});
