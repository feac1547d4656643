// The oracle itself: what it must catch (else a "zero violations" verdict would mean nothing).

import assert from "node:assert/strict";
import { test } from "node:test";

import { StrictValidator } from "./strict.mjs";

const update = (u) => ({ jsonrpc: "2.0", method: "session/update", params: { sessionId: "s", update: u } });

test("a valid update passes, with anything inside _meta", () => {
  const oracle = new StrictValidator();
  oracle.incoming(update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hi" }, messageId: "m1",
    _meta: { anything: { goes: [1] } } }));
  oracle.incoming(update({ sessionUpdate: "notice", severity: "warning", title: "Careful" }));
  assert.deepEqual(oracle.violations, []);
});

test("an unknown field, a salvaged value, a dropped item and an unknown method are caught", () => {
  const oracle = new StrictValidator();
  oracle.incoming(update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hi" }, extra: 1 }));
  oracle.incoming(update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hi" }, messageId: 7 }));
  oracle.incoming(update({ sessionUpdate: "plan", entries: [{ content: "x", status: "pending", priority: "medium" }, { bad: 1 }] }));
  oracle.incoming(update({ sessionUpdate: "notice", severity: "warning", title: "" }));
  oracle.incoming({ jsonrpc: "2.0", method: "_bridge/unknown", params: {} });
  oracle.incoming({ jsonrpc: "2.0", id: 9, result: {} });
  assert.equal(oracle.violations.length, 6, JSON.stringify(oracle.violations, null, 1));
});

test("a response is checked against the schema of what was asked", () => {
  const oracle = new StrictValidator();
  oracle.outgoing({ jsonrpc: "2.0", id: 1, method: "session/new", params: { cwd: "/", mcpServers: [] } });
  oracle.incoming({ jsonrpc: "2.0", id: 1, result: { sessionId: "s", configOptions: [{ id: "mode", name: "Mode", type: "select",
    currentValue: "a", options: [{ value: "a", name: "A" }] }] } });
  assert.deepEqual(oracle.violations, []);
  oracle.outgoing({ jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: "/", mcpServers: [] } });
  oracle.incoming({ jsonrpc: "2.0", id: 2, result: { modes: {} } });
  assert.equal(oracle.violations.length, 1);
});
