import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";

interface Manifest {
  capabilities: { untrustedWorkspaces: { restrictedConfigurations: string[] } };
  contributes: { configuration: { properties: Record<string, unknown> } };
}

const manifest = JSON.parse(readFileSync(join(__dirname, "..", "..", "package.json"), "utf8")) as Manifest;

describe("Restricted Mode: a folder's own .vscode/settings.json sets none of the bridge's settings", () => {
  it("lists every agentBridge setting as restricted: each changes what runs, what is allowed, where requests go or what they cost", () => {
    const restricted = new Set(manifest.capabilities.untrustedWorkspaces.restrictedConfigurations);
    const settings = Object.keys(manifest.contributes.configuration.properties);
    assert.ok(settings.includes("agentBridge.offlineScenario"), "the control: the list is the real one");
    assert.deepEqual(settings.filter((s) => !restricted.has(s)), [], "a scenario file is a model that asks for tool calls");
  });
});
