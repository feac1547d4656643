import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { serverKey } from "../../src/serverKey";
import type { ExtensionSettings } from "../../src/settings";

const settings: ExtensionSettings = {
  serverCommand: [],
  pythonPath: "",
  offlineScenario: "",
  model: "",
  permissionMode: "",
  maxTurns: undefined,
  additionalDirectories: [],
  baseUrl: "",
};

describe("the bridge's server key (a change restarts the bridge)", () => {
  it("changes when the API key is set, changed or removed, and not when it is set again unchanged", () => {
    const none = serverKey(settings, undefined);
    const first = serverKey(settings, "sk-ant-first-key-0123456789");
    const second = serverKey(settings, "sk-ant-second-key-0123456789");
    assert.notEqual(none, first);
    assert.notEqual(first, second, "a new key reaches the bridge");
    assert.equal(serverKey(settings, "sk-ant-first-key-0123456789"), first);
    assert.equal(serverKey(settings, undefined), none);
  });

  it("never holds the key itself", () => {
    const key = "sk-ant-secret-0123456789abcdef";
    const k = serverKey(settings, key);
    assert.ok(!k.includes(key) && !k.includes("secret"), k);
  });

  it("follows the server settings but not the model (it applies to the running session)", () => {
    assert.notEqual(serverKey({ ...settings, baseUrl: "http://proxy" }, undefined), serverKey(settings, undefined));
    assert.equal(serverKey({ ...settings, model: "claude-x" }, undefined), serverKey(settings, undefined));
  });
});
