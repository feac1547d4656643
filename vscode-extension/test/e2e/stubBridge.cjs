// A stand-in bridge for the UI paths the offline playground cannot reach: an edit's permission request
// (diff editor + accept) and a request the bridge withdraws ($/cancelRequest). Speaks LSP framing on stdio.
// argv[2]: a file where each permission answer is appended as a JSON line.
const fs = require("node:fs");
const path = require("node:path");
const rpc = require(path.join(__dirname, "../../node_modules/vscode-jsonrpc/node"));

const answers = process.argv[2];
const conn = rpc.createMessageConnection(new rpc.StreamMessageReader(process.stdin), new rpc.StreamMessageWriter(process.stdout));
const update = (sessionId, u) => conn.sendNotification("session/update", { sessionId, update: u });
const chunk = (sessionId, text) => update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text } });
const options = [
  { optionId: "allow_once", name: "Allow once", kind: "allow_once" },
  { optionId: "reject_once", name: "Reject", kind: "reject_once" },
];

conn.onRequest("initialize", () => ({ capabilities: {}, serverInfo: { name: "stub-bridge", version: "0" } }));
conn.onNotification("initialized", () => undefined);
conn.onRequest("shutdown", () => null);
conn.onNotification("exit", () => process.exit(0));
conn.onRequest("session/new", () => ({
  sessionId: "stub-1",
  modes: { currentModeId: "default", availableModes: [{ id: "default", name: "Default" }, { id: "acceptEdits", name: "Accept edits" }] },
}));
conn.onRequest("session/prompt", async ({ sessionId, prompt }) => {
  const text = prompt.map((b) => b.text ?? "").join("");
  const file = path.join(process.cwd(), "hello.py");
  if (text.startsWith("edit")) {
    const diff = { type: "diff", path: file, oldText: fs.readFileSync(file, "utf8"), newText: 'def greet(name: str) -> str:\n    return f"hello, {name}!"\n' };
    const toolCall = { toolCallId: "edit-1", title: "Edit hello.py", kind: "edit", status: "pending", rawInput: { file_path: file }, content: [diff], locations: [{ path: file }] };
    update(sessionId, { sessionUpdate: "plan", entries: [{ content: "Type the greeting", status: "in_progress" }, { content: "Run the tests", status: "pending" }] });
    update(sessionId, { sessionUpdate: "tool_call", ...toolCall });
    const answer = await conn.sendRequest("session/request_permission", { sessionId, toolCall, options });
    fs.appendFileSync(answers, JSON.stringify(answer) + "\n");
    update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: "edit-1", status: "completed", content: [diff] });
    update(sessionId, { sessionUpdate: "plan", entries: [{ content: "Type the greeting", status: "completed" }, { content: "Run the tests", status: "pending" }] });
    chunk(sessionId, `The edit was ${answer.outcome.optionId === "allow_once" ? "accepted" : "not accepted"}.`);
    return { stopReason: "end_turn" };
  }
  if (text.startsWith("withdraw")) {
    const source = new rpc.CancellationTokenSource();
    const toolCall = { toolCallId: "bash-1", title: "rm -rf build", kind: "execute", status: "pending", rawInput: { command: "rm -rf build" } };
    update(sessionId, { sessionUpdate: "tool_call", ...toolCall });
    const pending = conn.sendRequest("session/request_permission", { sessionId, toolCall, options }, source.token).catch((e) => ({ error: String(e) }));
    await new Promise((r) => setTimeout(r, 1500));
    source.cancel();
    fs.appendFileSync(answers, JSON.stringify(await pending) + "\n");
    chunk(sessionId, "I withdrew that request.");
    return { stopReason: "end_turn" };
  }
  const resources = prompt.filter((b) => b.type === "resource").map((b) => `${b.resource.uri} (${b.resource.text.length} chars)`);
  chunk(sessionId, resources.length ? `stub got: ${resources.join(", ")}` : "stub here");
  return { stopReason: "end_turn" };
});
conn.onNotification("session/cancel", () => undefined);
conn.listen();
