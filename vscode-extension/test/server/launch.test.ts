import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, it } from "node:test";
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from "vscode-jsonrpc/node";
import { bundledArgs } from "../../src/bridgeArgs";
import { clientCapabilities } from "../../src/protocol";
import { bridgeCommand } from "./bridgeServer";

/** Modules a cloned repository could plant to shadow the standard library's; each leaves a marker when run. */
const PLANTED = ["typing", "json", "enum", "dataclasses", "logging", "pathlib", "asyncio", "argparse"];

function plantedWorkspace(): { dir: string; markers: () => string[] } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ab-planted-"));
  const marks = path.join(dir, "ran");
  fs.mkdirSync(marks);
  for (const name of PLANTED) {
    fs.writeFileSync(path.join(dir, `${name}.py`), `open(${JSON.stringify(path.join(marks, name))}, "w").close()\n`);
  }
  return { dir, markers: () => fs.readdirSync(marks).sort() };
}

/** The venv's Python beside the test bridge's `agent-bridge` (the bundled launch runs the venv's Python). */
function venvPython(): string {
  return path.join(path.dirname(bridgeCommand()), "python");
}

/** Starts `python <args> --offline playground` in `cwd` and asks `initialize`; the answer, or the error. */
async function launch(args: string[], cwd: string): Promise<{ answered: boolean; stderr: string }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "ab-data-"));
  const child = spawn(venvPython(), [...args, "--offline", "playground"], {
    cwd,
    env: { ...process.env, AGENT_BRIDGE_DATA_DIR: dataDir },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const connection = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
  connection.listen();
  let answered = false;
  try {
    const request = connection.sendRequest("initialize", { processId: process.pid, rootUri: null, capabilities: {}, initializationOptions: { clientCapabilities } });
    await Promise.race([request, exited.then(() => Promise.reject(new Error("the bridge exited")))]);
    answered = true;
  } catch {
    answered = false;
  } finally {
    child.kill("SIGKILL");
    await exited;
    connection.dispose();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  return { answered, stderr };
}

describe("the bundled bridge's launch", () => {
  it("never imports a module the workspace plants in place of the standard library's", async () => {
    const { dir, markers } = plantedWorkspace();
    try {
      const { answered, stderr } = await launch(bundledArgs(), dir);
      assert.ok(answered, `the bridge answered initialize in a folder full of planted modules\n${stderr}`);
      assert.deepEqual(markers(), [], "no planted module ran");
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("control: without -P the planted modules do run (the class of attack is real)", async () => {
    const { dir, markers } = plantedWorkspace();
    try {
      await launch(bundledArgs().filter((a) => a !== "-P"), dir);
      assert.ok(markers().length > 0, "a planted standard-library module ran from the workspace");
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
