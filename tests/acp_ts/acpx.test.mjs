// acpx (a headless ACP CLI nobody here wrote) drives agent-bridge: a one-shot prompt that reads a file, approved by
// acpx's own policy; and every message the bridge sent (acpx's `--format json` shows the wire) is valid ACP v1.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";
import { test } from "node:test";

import { answer, Model, PYTHON, ROOT, toolUse, World } from "./bridge.mjs";
import { StrictValidator } from "./strict.mjs";

const ACPX = path.join(path.dirname(fileURLToPath(import.meta.url)), "node_modules", ".bin", "acpx");
const AGENT_METHODS = new Set(["initialize", "authenticate", "logout", "session/new", "session/load", "session/list",
  "session/resume", "session/delete", "session/close", "session/set_mode", "session/set_config_option",
  "session/prompt", "session/cancel"]);

test("acpx exec: a prompt that reads a file, approved by acpx, on valid ACP", async () => {
  const world = new World();
  const file = path.join(world.workspace, "notes.txt");
  writeFileSync(file, "remember the milk\n");
  const model = await Model.start(world, { responses: [toolUse(["Read", { file_path: file }]), answer("It says: milk.")] });
  try {
    const env = {
      ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith("ANTHROPIC_"))),
      ANTHROPIC_BASE_URL: model.url, ANTHROPIC_API_KEY: "test-key", AGENT_BRIDGE_DATA_DIR: world.data,
      AGENT_BRIDGE_CONFIG_DIR: path.join(world.data, "config"), HOME: path.join(world.data, "home"), PYTHONPATH: ROOT,
    };
    const agent = `${PYTHON} -m bridge.cli.main acp`;
    const { stdout } = await promisify(execFile)(ACPX, ["--agent", agent, "--cwd", world.workspace, "--approve-all",
      "--format", "json", "--timeout", "120", "exec", "what do my notes say?"], { env, cwd: world.workspace, timeout: 150_000 });
    const wire = stdout.split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line));
    const oracle = new StrictValidator();
    for (const message of wire) {
      if ("method" in message && AGENT_METHODS.has(message.method)) oracle.outgoing(message);
      else if ("method" in message || (!("error" in message) && typeof message.id !== "string")) oracle.incoming(message);
      // (else: acpx's answer to one of the bridge's requests)
    }
    const prompt = wire.find((m) => m.method === "session/prompt");
    assert.equal(wire.find((m) => m.id === prompt.id && "result" in m).result.stopReason, "end_turn");
    const updates = wire.filter((m) => m.method === "session/update").map((m) => m.params.update);
    const said = updates.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text).join("");
    assert.equal(said, "It says: milk.");
    const read = updates.find((u) => u.sessionUpdate === "tool_call_update" && u.status === "completed");
    assert.match(JSON.stringify(read.content), /remember the milk/);
    assert.deepEqual(oracle.violations.map((v) => v.problems.join("; ")), []);
    assert.ok(oracle.seen > 5);
  } finally {
    await model.stop();
    world.dispose();
  }
});
