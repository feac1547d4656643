// agent-bridge as a client on the official ACP TypeScript SDK (2.4.0) sees it: stable ACP v1 as of late 2026 —
// capabilities, config options (mode, model, thinking), notices, resume and delete, session info, sub-agents inside
// their Agent call — with every message the bridge sends checked against the SDK's schema (strict.mjs).

import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, test } from "node:test";

import { methods } from "@agentclientprotocol/sdk";

import { answer, Bridge, FS, Model, NOTICES, toolUse, until, World } from "./bridge.mjs";

let world;
let running;

beforeEach(() => {
  world = new World();
  running = [];
});

afterEach(async () => {
  const verdicts = [];
  for (const item of running.reverse()) {
    const violations = await item.close?.();
    if (violations) verdicts.push(...violations);
    await item.stop?.();
  }
  world.dispose();
  assert.deepEqual(verdicts.map((v) => `${v.message.method ?? `response ${v.message.id}`}: ${v.problems.join("; ")}`), [],
    "every message the bridge sent is valid ACP v1");
});

async function start(scenario, options) {
  const model = await Model.start(world, scenario);
  running.push(model);
  return { model, bridge: await connect(model, options) };
}

async function connect(model, options) {
  const bridge = Bridge.start(world, model, options);
  running.push(bridge);
  return bridge;
}

const chunkText = (updates) => updates.filter((u) => u.content?.type === "text").map((u) => u.content.text).join("");

test("initialize advertises what works", async () => {
  const { bridge } = await start({ responses: [] });
  const init = await bridge.initialize(NOTICES);
  assert.equal(init.protocolVersion, 1);
  assert.equal(init.agentInfo.name, "agent-bridge");
  const sessions = init.agentCapabilities.sessionCapabilities;
  for (const capability of ["list", "close", "resume", "delete", "additionalDirectories"]) {
    assert.ok(sessions[capability], `sessionCapabilities.${capability}`);
  }
  assert.equal(init.agentCapabilities.loadSession, true);
  assert.deepEqual(init.authMethods.map((m) => m.id), ["anthropic-api-key"]);
});

test("a client that advertises notices gets them as notice updates, never in the answer", async () => {
  mkdirSync(path.join(world.workspace, ".agent-bridge"));
  writeFileSync(path.join(world.workspace, ".agent-bridge", "settings.json"), "{ not json");
  const { bridge } = await start({ responses: [answer("The answer.")] });
  await bridge.initialize(NOTICES);
  const session = await bridge.agent.buildSession(world.workspace).start();
  await until(() => bridge.updates(session.sessionId, "notice").length, "the settings notice");
  const prompted = session.prompt("hello");
  const text = await session.readText();
  assert.equal((await prompted).stopReason, "end_turn");
  assert.equal(text, "The answer.", "the SDK's readText is the model's answer alone");
  const [notice] = bridge.updates(session.sessionId, "notice");
  assert.equal(notice.severity, "warning");
  assert.match(`${notice.title} ${notice.description ?? ""}`, /settings\.json/);
  assert.ok(!chunkText(bridge.updates(session.sessionId, "agent_message_chunk")).includes("settings.json"));
  session.dispose();
});

test("a client without notices gets each as a message of its own", async () => {
  mkdirSync(path.join(world.workspace, ".agent-bridge"));
  writeFileSync(path.join(world.workspace, ".agent-bridge", "settings.json"), "{ not json");
  const { bridge } = await start({ responses: [answer("The answer.")] });
  await bridge.initialize({});
  const session = await bridge.agent.buildSession(world.workspace).start();
  await until(() => bridge.updates(session.sessionId, "agent_message_chunk").length, "the notice chunk");
  await session.prompt("hello");
  assert.deepEqual(bridge.updates(session.sessionId, "notice"), []);
  const chunks = bridge.updates(session.sessionId, "agent_message_chunk");
  assert.ok(chunks.every((u) => u.messageId), "every chunk names its message");
  const notice = chunks.find((u) => u._meta?.notice);
  assert.match(notice.content.text, /settings\.json/);
  const answerIds = new Set(chunks.filter((u) => !u._meta?.notice).map((u) => u.messageId));
  assert.equal(answerIds.size, 1);
  assert.ok(!answerIds.has(notice.messageId), "the notice is not part of the answer's message");
  session.dispose();
});

test("mode, model and thinking change through session/set_config_option, and the next request uses them", async () => {
  const write = { type: "tool_use", name: "Write", input: { file_path: path.join(world.workspace, "x.txt"), content: "x" } };
  const thinking = { type: "thinking", thinking: "Plan first.", signature: "sig" };
  const { bridge, model } = await start({ responses: [answer("One."), { content: [thinking, write], stop_reason: "tool_use" },
    answer("Two.")] });
  await bridge.initialize({ ...NOTICES, session: { notices: {}, configOptions: {} } });
  const created = await bridge.request(methods.agent.session.new, { cwd: world.workspace, mcpServers: [] });
  const sessionId = created.sessionId;
  const byCategory = Object.fromEntries(created.configOptions.map((o) => [o.category, o]));
  assert.deepEqual(Object.keys(byCategory).sort(), ["mode", "model", "thought_level"]);
  assert.equal(byCategory.mode.currentValue, "default");
  assert.ok(byCategory.model.options.every((o) => o.name && o.value), "models the user can pick, with names");
  assert.equal(created.modes.currentModeId, "default", "modes kept for older clients");

  await bridge.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "first" }] });
  const other = byCategory.model.options.map((o) => o.value).find((v) => v !== byCategory.model.currentValue);
  const set = (configId, value) => bridge.request(methods.agent.session.setConfigOption, { sessionId, configId, value });
  const afterMode = await set("mode", "plan");
  assert.equal(afterMode.configOptions.find((o) => o.id === "mode").currentValue, "plan");
  await until(() => bridge.updates(sessionId, "current_mode_update").length, "the mode announced");
  await until(() => bridge.updates(sessionId, "config_option_update").length, "the options announced");
  await set("model", other);
  const afterThinking = await set("thought_level", "high");
  assert.deepEqual(afterThinking.configOptions.map((o) => o.currentValue), ["plan", other, "high"]);
  await assert.rejects(set("thought_level", "enormous"), (error) => error.code === -32602);
  await assert.rejects(set("colour", "blue"), (error) => error.code === -32602);

  await bridge.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "second" }] });
  const [first, second, third] = await model.requestsSoon(3);
  assert.equal(first.thinking, undefined);
  assert.equal(second.model, other);
  assert.equal(second.thinking.type, "enabled");
  assert.ok(second.thinking.budget_tokens >= 30_000 && second.max_tokens > second.thinking.budget_tokens);
  assert.match(JSON.stringify(third.messages.at(-1)), /Plan mode/, "in plan mode the write was refused");
  assert.deepEqual(bridge.permissions, [], "without asking");
});

test("a session is resumed without its history, goes on, and is deleted", async () => {
  const { bridge, model } = await start({ responses: [answer("Noted."), answer("Still here.")] });
  await bridge.initialize({});
  const { sessionId } = await bridge.request(methods.agent.session.new, { cwd: world.workspace, mcpServers: [] });
  await bridge.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "remember 42" }] });
  const [info] = bridge.updates(sessionId, "session_info_update");
  assert.equal(info.title, "remember 42");
  assert.match(info.updatedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  const [usage] = bridge.updates(sessionId, "usage_update");
  assert.ok(usage.used > 0 && usage.size > 0 && usage.cost.currency === "USD");
  await bridge.close();

  const again = await connect(model);
  await again.initialize({});
  const resumed = await again.request(methods.agent.session.resume, { sessionId, cwd: world.workspace, mcpServers: [] });
  assert.equal(resumed.configOptions.length, 3);
  const answered = again.position((m) => m.id !== undefined && m.result?.configOptions);
  const replayed = again.wire.slice(0, answered).filter((w) => w.message.method === "session/update");
  assert.deepEqual(replayed, [], "resume replays nothing");
  await again.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "what was it?" }] });
  assert.match(JSON.stringify((await model.requestsSoon(2))[1].messages), /remember 42/, "the history goes on");
  const listed = await again.request(methods.agent.session.list, {});
  assert.deepEqual(listed.sessions.map((s) => s.sessionId), [sessionId]);

  await again.request(methods.agent.session.delete, { sessionId });
  assert.deepEqual((await again.request(methods.agent.session.list, {})).sessions, []);
  await assert.rejects(again.request(methods.agent.session.resume, { sessionId, cwd: world.workspace, mcpServers: [] }),
    (error) => error.code === -32002);
});

test("a sub-agent's work shows only inside its Agent call, live and replayed", async () => {
  writeFileSync(path.join(world.workspace, "notes.txt"), "a note\n");
  const scenario = {
    responses: [
      { content: [{ type: "text", text: "Delegating." }, { type: "tool_use", name: "Agent",
        input: { description: "Count notes", prompt: "count the notes", subagent_type: "Explore" } }],
      stop_reason: "tool_use" },
      answer("There is one note."),
    ],
    agents: [{ prompt: "count the notes", responses: [toolUse(["Glob", { pattern: "*.txt" }]), answer("Found notes.txt only.")] }],
  };
  const { bridge, model } = await start(scenario);
  await bridge.initialize(NOTICES);
  const session = await bridge.agent.buildSession(world.workspace).start();
  const prompted = session.prompt("how many notes?");
  assert.equal(await session.readText(), "Delegating.There is one note.", "the parent's message is the parent's");
  await prompted;
  const look = (b, sid) => {
    const updates = b.updates(sid);
    assert.ok(updates.every((u) => !u._meta?.parentToolCallId), "nothing needs _meta to be placed");
    const calls = updates.filter((u) => u.sessionUpdate === "tool_call");
    assert.deepEqual(calls.map((c) => c.title), ["Count notes"], "one tool call: the Agent's");
    const agentCall = calls[0].toolCallId;
    assert.ok(updates.filter((u) => u.sessionUpdate === "tool_call_update").every((u) => u.toolCallId === agentCall));
    const last = updates.filter((u) => u.toolCallId === agentCall).at(-1);
    const shown = last.content.map((c) => c.content.text).join("\n");
    assert.match(shown, /Glob/);
    assert.match(shown, /Found notes\.txt only\./);
    assert.equal(chunkText(updates.filter((u) => u.sessionUpdate === "user_message_chunk")).includes("count the notes"), false,
      "the sub-agent's prompt is no user message");
    return updates;
  };
  look(bridge, session.sessionId);
  session.dispose();
  await bridge.close();

  const again = await connect(model);
  await again.initialize(NOTICES);
  await again.request(methods.agent.session.load, { sessionId: session.sessionId, cwd: world.workspace, mcpServers: [] });
  const replay = look(again, session.sessionId);
  assert.equal(chunkText(replay.filter((u) => u.sessionUpdate === "user_message_chunk")), "how many notes?");
});

test("additional directories widen the session's workspace", async () => {
  const extra = path.join(world.dir, "extra");
  mkdirSync(extra);
  writeFileSync(path.join(extra, "shared.txt"), "shared text\n");
  const read = toolUse(["Read", { file_path: path.join(extra, "shared.txt") }]);
  const { bridge } = await start({ responses: [read, answer("Read it."), read, answer("Read it too.")] });
  await bridge.initialize({});
  const plain = await bridge.request(methods.agent.session.new, { cwd: world.workspace, mcpServers: [] });
  await bridge.request(methods.agent.session.prompt, { sessionId: plain.sessionId, prompt: [{ type: "text", text: "read" }] });
  assert.equal(bridge.permissions.length, 1, "outside the workspace, a read asks");
  const wide = await bridge.request(methods.agent.session.new,
    { cwd: world.workspace, mcpServers: [], additionalDirectories: [extra] });
  await bridge.request(methods.agent.session.prompt, { sessionId: wide.sessionId, prompt: [{ type: "text", text: "read" }] });
  assert.equal(bridge.permissions.length, 1, "inside an added directory, it does not");
  await assert.rejects(bridge.request(methods.agent.session.new,
    { cwd: world.workspace, mcpServers: [], additionalDirectories: ["relative/dir"] }), (error) => error.code === -32602);
});

test("logout ends the authenticated session until authenticate", async () => {
  const { bridge, model } = await start({ responses: [answer("Before."), answer("After.")] });
  const init = await bridge.initialize({});
  assert.ok(init.agentCapabilities.auth.logout, "auth.logout advertised");
  const { sessionId } = await bridge.request(methods.agent.session.new, { cwd: world.workspace, mcpServers: [] });
  const prompt = (text) => bridge.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
  await prompt("first-prompt");
  await bridge.request(methods.agent.logout, {});
  await assert.rejects(prompt("signed-out-prompt"), (error) => error.code === -32000, "auth_required after logout");
  await bridge.request(methods.agent.authenticate, { methodId: "anthropic-api-key" });
  assert.equal((await prompt("prompt-after-authenticate")).stopReason, "end_turn");
  const asked = await until(() => {
    const seen = model.requests();
    return /prompt-after-authenticate/.test(JSON.stringify(seen)) && seen;
  }, "the request after authenticate");
  assert.equal(asked.length, 2);
  assert.doesNotMatch(JSON.stringify(asked), /signed-out-prompt/, "nothing reached the model while signed out");
});
