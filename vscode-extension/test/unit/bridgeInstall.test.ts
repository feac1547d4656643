import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, describe, it } from "node:test";
import { type BridgeManifest, ensureBridge, findPython, NoSuitablePython, readManifest, venvPython } from "../../src/bridgeInstall";
import { orderedOptions } from "../../src/permissionRequests";
import type { PermissionOption } from "../../src/protocol";
import { CrashCounter, healthyMs, maxCrashes } from "../../src/restartPolicy";
import { bridgeCommand } from "../server/bridgeServer";

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "ab-install-"));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));
const python = path.join(path.dirname(bridgeCommand()), "python");
const log = { info: (): void => undefined, warn: (): void => undefined };

/** A fake interpreter: a shell script that answers the version probe as `version` would. */
function fakePython(name: string, version: string): string {
  const file = path.join(tmp, name);
  fs.writeFileSync(file, `#!/bin/sh\necho ${version}\necho ${file}\n`, { mode: 0o755 });
  return file;
}

/**
 * An extension folder whose bridge/wheels holds a tiny agent_bridge wheel (made with Python's zipfile) and, as
 * "pip", a link to a real pip package dir (pip runs from a directory as it does from its wheel).
 */
function fakeExtension(version: string): { dir: string; manifest: BridgeManifest } {
  const dir = path.join(tmp, `ext-${version}`);
  const wheels = path.join(dir, "bridge", "wheels");
  fs.mkdirSync(wheels, { recursive: true });
  const wheel = `agent_bridge-${version}-py3-none-any.whl`;
  const dist = `agent_bridge-${version}.dist-info`;
  const script = [
    "import sys, zipfile",
    "z = zipfile.ZipFile(sys.argv[1], 'w')",
    `z.writestr('bridge/__init__.py', 'VERSION = "${version}"\\n')`,
    `z.writestr('${dist}/METADATA', 'Metadata-Version: 2.1\\nName: agent-bridge\\nVersion: ${version}\\n')`,
    `z.writestr('${dist}/WHEEL', 'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')`,
    `z.writestr('${dist}/RECORD', '')`,
    "z.close()",
  ].join("\n");
  execFileSync(python, ["-c", script, path.join(wheels, wheel)]);
  const pipPackage = execFileSync(python, ["-c", "import pip, os; print(os.path.dirname(os.path.dirname(pip.__file__)))"]).toString().trim();
  fs.symlinkSync(pipPackage, path.join(wheels, "pip-from-venv"));
  const manifest = { version, wheel, sha256: `${version.replace(/\./g, "")}0123456789abcdef`, pip: "pip-from-venv" };
  fs.writeFileSync(path.join(dir, "bridge", "manifest.json"), JSON.stringify(manifest));
  return { dir, manifest };
}

describe("finding a Python for the bridge", () => {
  it("skips what is missing or too old, and names each one when none fits", async () => {
    const old = fakePython("python-old", "3.9");
    await assert.rejects(
      findPython([
        { command: path.join(tmp, "no-such-python"), source: "agentBridge.pythonPath" },
        { command: old, source: "PATH" },
      ]),
      (err: unknown) => {
        assert.ok(err instanceof NoSuitablePython);
        assert.match(err.message, /no-such-python \(agentBridge\.pythonPath\): not found/);
        assert.match(err.message, /python-old \(PATH\): Python 3\.9, too old/);
        return true;
      },
    );
  });

  it("takes the first new-enough one and reports its real executable", async () => {
    const found = await findPython([
      { command: fakePython("python-ancient", "3.8"), source: "PATH" },
      { command: python, source: "the Python extension" },
    ]);
    assert.equal(found.source, "the Python extension");
    assert.match(found.version, /^3\.(1[1-9]|[2-9]\d)$/);
    assert.ok(fs.existsSync(found.executable));
  });
});

describe("installing the bundled bridge", () => {
  const storage = path.join(tmp, "storage");

  it("makes a private venv from the bundled wheels, once per version, and removes the old version after an update", async () => {
    const first = fakeExtension("0.0.1");
    assert.deepEqual(readManifest(first.dir), { ...first.manifest, target: undefined });
    let asked = 0;
    const pythonOnce = async () => {
      asked++;
      return findPython([{ command: python, source: "PATH" }]);
    };
    const installed = await ensureBridge({ extensionPath: first.dir, storagePath: storage, manifest: first.manifest, python: pythonOnce, log });
    assert.equal(installed.installed, true);
    assert.equal(installed.python, venvPython(installed.dir));
    assert.equal(execFileSync(installed.python, ["-c", "import bridge; print(bridge.VERSION)"]).toString().trim(), "0.0.1");
    const again = await ensureBridge({ extensionPath: first.dir, storagePath: storage, manifest: first.manifest, python: pythonOnce, log });
    assert.deepEqual([again.installed, again.dir, asked], [false, installed.dir, 1], "installed once; no Python asked again");

    const update = fakeExtension("0.0.2");
    const updated = await ensureBridge({ extensionPath: update.dir, storagePath: storage, manifest: update.manifest, python: pythonOnce, log });
    assert.equal(execFileSync(updated.python, ["-c", "import bridge; print(bridge.VERSION)"]).toString().trim(), "0.0.2");
    assert.deepEqual(fs.readdirSync(path.join(storage, "bridge")), [path.basename(updated.dir)], "the old version is removed");
  });

  it("a failed install leaves nothing that looks installed, and says which Python it used", async () => {
    const broken = fakeExtension("0.0.3");
    const manifest = { ...broken.manifest, version: "9.9.9" }; // no such wheel: pip fails (with and without the index)
    const storageBroken = path.join(tmp, "storage-broken");
    await assert.rejects(
      ensureBridge({ extensionPath: broken.dir, storagePath: storageBroken, manifest, python: () => findPython([{ command: python, source: "PATH" }]), log }),
      /Installing the bridge with Python 3\.\d+ .* failed/,
    );
    assert.deepEqual(fs.readdirSync(path.join(storageBroken, "bridge")), []);
  });
});

describe("restarting a crashed bridge", () => {
  it("backs off, gives up after too many crashes in a row, and starts over after a healthy period", () => {
    const counter = new CrashCounter();
    const delays = Array.from({ length: maxCrashes }, (_, i) => counter.record(1000 + i, 1000 + i - 10).delayMs);
    assert.deepEqual(delays, [500, 1000, 2000, 4000]);
    assert.equal(counter.record(2000, 1990).delayMs, undefined, "gives up");
    assert.equal(counter.record(10 * healthyMs, 10 * healthyMs - healthyMs).delayMs, 500, "up long enough: a first crash again");
  });
});

describe("permission options", () => {
  const option = (kind: PermissionOption["kind"]): PermissionOption => ({ optionId: kind, name: kind, kind });

  it("are offered Allow once first and never with an always-option first", () => {
    const shuffled = [option("allow_always"), option("reject_always"), option("reject_once"), option("allow_once")];
    assert.deepEqual(orderedOptions(shuffled).map((o) => o.kind), ["allow_once", "reject_once", "allow_always", "reject_always"]);
    assert.equal(orderedOptions([option("allow_always"), option("reject_once")])[0]?.kind, "reject_once");
  });
});
