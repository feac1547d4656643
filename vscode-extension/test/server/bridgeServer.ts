import { type ChildProcess, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { type CancellationToken, createMessageConnection, type MessageConnection, StreamMessageReader, StreamMessageWriter } from "vscode-jsonrpc/node";
import type { AgentConnection } from "../../src/connection";
import { clientCapabilities } from "../../src/protocol";

/** The bridge command: $AGENT_BRIDGE, else $VENV/bin/agent-bridge, else the repo's .venv. */
export function bridgeCommand(): string {
  const repo = path.resolve(__dirname, "../../..");
  const candidates = [process.env.AGENT_BRIDGE, process.env.VENV && path.join(process.env.VENV, "bin/agent-bridge"), path.join(repo, ".venv/bin/agent-bridge")];
  const found = candidates.find((c): c is string => !!c && fs.existsSync(c));
  if (!found) throw new Error(`agent-bridge not found (tried ${candidates.filter(Boolean).join(", ")}); set AGENT_BRIDGE or VENV`);
  return found;
}

export interface RunningBridge {
  connection: MessageConnection;
  agent: AgentConnection;
  stderr: () => string;
  stop: () => Promise<void>;
  /** `kill -9`, then the connection is disposed (its pending requests reject). */
  kill: () => Promise<void>;
}

/**
 * Spawns `agent-bridge serve --offline <scenario>` (the playground unless a scenario file is given) and does the
 * LSP handshake over vscode-jsonrpc. Transcripts go to `dataDir` (a fresh temp dir, removed on stop, when not
 * given), never to the user's own data dir.
 */
export async function startBridge(cwd: string, dataDir?: string, opts: { scenario?: string; env?: Record<string, string> } = {}): Promise<RunningBridge> {
  const ownDataDir = dataDir ? undefined : fs.mkdtempSync(path.join(os.tmpdir(), "ab-data-"));
  const env = { ...process.env, ...opts.env, AGENT_BRIDGE_DATA_DIR: dataDir ?? ownDataDir };
  const child: ChildProcess = spawn(bridgeCommand(), ["serve", "--offline", opts.scenario ?? "playground"], { cwd, env, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  if (!child.stdout || !child.stdin) throw new Error("no stdio");
  const connection = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
  connection.onNotification("window/logMessage", () => undefined);
  connection.listen();
  await connection.sendRequest("initialize", {
    processId: process.pid,
    rootUri: null,
    capabilities: {},
    initializationOptions: { clientCapabilities },
  });
  await connection.sendNotification("initialized", {});
  const agent: AgentConnection = {
    sendRequest: (method, params) => connection.sendRequest(method, params),
    sendNotification: (method, params) => connection.sendNotification(method, params),
    onNotification: (method, handler) => connection.onNotification(method, handler),
    onRequest: (method, handler) => connection.onRequest(method, (params: unknown, token: CancellationToken) => handler(params, token)),
  };
  const stop = async (): Promise<void> => {
    const exited = new Promise<void>((resolve) => {
      if (child.exitCode !== null) resolve();
      else child.once("exit", () => resolve());
    });
    try {
      await Promise.race([connection.sendRequest("shutdown"), new Promise((r) => setTimeout(r, 2000))]);
      await connection.sendNotification("exit");
    } catch {
      // already gone
    }
    const killer = setTimeout(() => child.kill("SIGKILL"), 3000);
    await exited;
    clearTimeout(killer);
    connection.dispose();
    if (ownDataDir) fs.rmSync(ownDataDir, { recursive: true, force: true });
  };
  const kill = async (): Promise<void> => {
    const exited = new Promise<void>((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once("exit", () => resolve())));
    child.kill("SIGKILL");
    await exited;
    connection.dispose();
    if (ownDataDir) fs.rmSync(ownDataDir, { recursive: true, force: true });
  };
  return { connection, agent, stderr: () => stderr, stop, kill };
}
