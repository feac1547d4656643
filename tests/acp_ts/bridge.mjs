// `agent-bridge acp` driven by the official ACP TypeScript SDK (`client()`), as an editor built on it would drive
// it. The model is the bridge's offline Messages API (offline_model.py: a real loopback server playing a scripted
// scenario, recording each request body). Every message on the wire, both ways, is kept; every message the bridge
// sends goes through the strict oracle (strict.mjs).

import { spawn } from "node:child_process";
import { once } from "node:events";
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";

import { client, methods, ndJsonStream } from "@agentclientprotocol/sdk";

import { StrictValidator } from "./strict.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(HERE, "../..");
export const PYTHON = process.env.AGENT_BRIDGE_PYTHON ?? path.join(ROOT, process.env.VENV ?? ".venv", "bin", "python");

export const NOTICES = { session: { notices: {} } };
export const FS = { fs: { readTextFile: true, writeTextFile: true } };

/** A scripted answer: text streamed in a few chunks. */
export function answer(text) {
  return { content: [{ type: "text", text, chunks: 3 }], stop_reason: "end_turn" };
}

/** A scripted response that calls tools: `[name, input]` pairs. */
export function toolUse(...calls) {
  return { content: calls.map(([name, input]) => ({ type: "tool_use", name, input })), stop_reason: "tool_use" };
}

/** One test's world: a temp dir with the workspace, the bridge's data and home; removed by `dispose`. */
export class World {
  constructor() {
    this.dir = mkdtempSync(path.join(tmpdir(), "acp-ts-"));
    this.workspace = path.join(this.dir, "ws");
    this.data = path.join(this.dir, "data");
    for (const dir of [this.workspace, this.data, path.join(this.data, "home")]) mkdirSync(dir, { recursive: true });
  }

  dispose() {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The offline model with `scenario` (`{responses, agents?}`); `requests()` are the bodies the bridge sent. */
export class Model {
  static async start(world, scenario) {
    const model = new Model(world, scenario);
    await model.#ready;
    return model;
  }

  constructor(world, scenario) {
    const file = path.join(world.dir, `scenario-${Date.now()}-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(file, JSON.stringify({ name: "ts-conformance", ...scenario }));
    this.requestsFile = `${file}.requests.jsonl`;
    this.process = spawn(PYTHON, [path.join(HERE, "offline_model.py"), file, this.requestsFile], {
      cwd: ROOT, stdio: ["pipe", "pipe", "inherit"], env: { ...process.env, PYTHONPATH: ROOT },
    });
    this.#ready = new Promise((resolve, reject) => {
      const lines = createInterface({ input: this.process.stdout });
      lines.once("line", (line) => resolve((this.url = line.replace("listening on ", "").trim())));
      this.process.once("exit", (code) => reject(new Error(`the offline model exited (${code})`)));
    });
  }

  #ready;

  requests() {
    if (!existsSync(this.requestsFile)) return [];
    return readFileSync(this.requestsFile, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line).body);
  }

  /** The first `n` requests, once they are written (offline_model.py writes what it recorded every 20 ms, so a
   * request can be written just after the bridge's answer to the prompt that made it). */
  async requestsSoon(n) {
    return (await until(() => { const seen = this.requests(); return seen.length >= n && seen; },
      `${n} requests to the model`)).slice(0, n);
  }

  async stop() {
    this.process.stdin.end();
    if (this.process.exitCode === null) await once(this.process, "exit");
  }
}

/** One `agent-bridge acp` process and the SDK's client connection to it. */
export class Bridge {
  static start(world, model, { env = {} } = {}) {
    return new Bridge(world, model, env);
  }

  constructor(world, model, env) {
    this.world = world;
    this.validator = new StrictValidator();
    this.wire = []; // {direction: "in" | "out", message, at}
    this.permissions = [];
    this.buffers = new Map(); // path -> the editor's (unsaved) text
    this.stderrFile = path.join(world.data, `stderr-${Date.now()}.log`);
    const stderr = createWriteStream(this.stderrFile);
    this.process = spawn(PYTHON, ["-m", "bridge.cli.main", "acp"], {
      cwd: ROOT,
      stdio: ["pipe", "pipe", "pipe"],
      env: {
        ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith("ANTHROPIC_"))),
        ANTHROPIC_BASE_URL: model.url,
        ANTHROPIC_API_KEY: "test-key",
        AGENT_BRIDGE_DATA_DIR: world.data,
        AGENT_BRIDGE_CONFIG_DIR: path.join(world.data, "config"),
        AGENT_BRIDGE_MAX_RETRY_WAIT: "0.05",
        AGENT_BRIDGE_LOG: "INFO",
        HOME: path.join(world.data, "home"),
        PYTHONPATH: ROOT,
        ...env,
      },
    });
    this.process.stderr.pipe(stderr);
    this.exited = once(this.process, "exit");
    const raw = ndJsonStream(Writable.toWeb(this.process.stdin), Readable.toWeb(this.process.stdout));
    const app = client({ name: "acp-ts-conformance" })
      .onRequest(methods.client.session.requestPermission, async ({ params }) => {
        this.permissions.push(params);
        const allow = params.options.find((option) => option.kind === "allow_once") ?? params.options[0];
        return { outcome: { outcome: "selected", optionId: allow.optionId } };
      })
      .onRequest(methods.client.fs.readTextFile, async ({ params }) => ({
        content: this.buffers.get(params.path) ?? readFileSync(params.path, "utf8"),
      }))
      .onRequest(methods.client.fs.writeTextFile, async ({ params }) => {
        this.buffers.set(params.path, params.content);
        return {};
      })
      .onNotification(methods.client.session.update, () => {});
    this.connection = app.connect(this.#observed(raw));
    this.agent = this.connection.agent;
  }

  /** The stream with every message recorded (and the bridge's checked) on its way. */
  #observed(raw) {
    const record = (direction) => new TransformStream({
      transform: (message, controller) => {
        this.wire.push({ direction, message, at: performance.now() });
        if (direction === "in") this.validator.incoming(message);
        else this.validator.outgoing(message);
        controller.enqueue(message);
      },
    });
    const outgoing = record("out");
    void outgoing.readable.pipeTo(raw.writable).catch(() => {});
    return { readable: raw.readable.pipeThrough(record("in")), writable: outgoing.writable };
  }

  request(method, params) {
    return this.agent.request(method, params);
  }

  initialize(clientCapabilities = {}) {
    return this.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities });
  }

  /** Every `session/update` of `sessionId` (of `kind`, if given), in order. */
  updates(sessionId, kind) {
    return this.wire
      .filter((w) => w.direction === "in" && w.message.method === "session/update" && w.message.params.sessionId === sessionId)
      .map((w) => w.message.params.update)
      .filter((update) => kind === undefined || update.sessionUpdate === kind);
  }

  /** The position on the wire of the first incoming message `predicate` holds for. */
  position(predicate) {
    return this.wire.findIndex((w) => w.direction === "in" && predicate(w.message));
  }

  stderr() {
    return existsSync(this.stderrFile) ? readFileSync(this.stderrFile, "utf8") : "";
  }

  /** Closes the connection (the bridge ends with its stdin); the oracle's verdict on everything it sent. */
  async close() {
    this.connection.close();
    this.process.stdin.end();
    const timer = setTimeout(() => this.process.kill("SIGKILL"), 20_000);
    await this.exited;
    clearTimeout(timer);
    return this.validator.violations;
  }
}

/** Polls `predicate` until it returns something truthy (at most `timeout` ms). */
export async function until(predicate, what, timeout = 20_000) {
  const deadline = performance.now() + timeout;
  for (;;) {
    const value = predicate();
    if (value) return value;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
