import { type ChildProcess, spawn } from "node:child_process";
import * as vscode from "vscode";
import {
  CloseAction,
  ErrorAction,
  type ErrorHandler,
  LanguageClient,
  type LanguageClientOptions,
  RevealOutputChannelOn,
} from "vscode-languageclient/node";
import type { AgentConnection } from "./connection";
import { CrashCounter, givenUp, maxCrashes } from "./restartPolicy";
import { errorMessage } from "./session";
import { type BridgeLaunch, describeCommand } from "./settings";

/**
 * ready: the bridge answered `initialize`; `resume` says the conversation should carry on in it (a restart
 * after a crash, the Restart command, a settings change) rather than start anew.
 * crashed: it stopped without being asked; `restart`: when it comes back, and which restart in a row this is
 * (undefined: it is not restarted again).
 */
export type ClientEvent =
  | { kind: "ready"; connection: AgentConnection; resume: boolean }
  | { kind: "crashed"; reason: string; restart?: { inMs: number; attempt: number; of: number } }
  | { kind: "failed"; message: string }
  | { kind: "stopped" };

/** vscode-languageclient shows its own notifications for start and connection errors; ours say more, once. */
class QuietLanguageClient extends LanguageClient {
  override error(message: string, data?: unknown): void {
    super.error(message, data, false);
  }
}

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * Runs `agent-bridge serve` over stdio with vscode-languageclient (open documents are synced, so the
 * bridge's Read sees unsaved text). We spawn the process ourselves, to know how it ended: a crash is
 * reported with its exit code or signal and restarted with backoff (restartPolicy.ts); after too many in a
 * row it stays down until the Restart command. A start failure is reported once; nothing throws.
 */
export class BridgeClient implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private process: ChildProcess | undefined;
  private launch: BridgeLaunch | undefined;
  private cwd: string | undefined;
  /** Bumped by every start and stop: a start that is no longer the newest gives way. */
  private generation = 0;
  private readonly crashes = new CrashCounter();
  private readyAt = 0;
  private restartTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly log: vscode.LogOutputChannel,
    private readonly output: vscode.OutputChannel,
    private readonly onEvent: (e: ClientEvent) => void,
  ) {}

  get running(): boolean {
    return this.client?.isRunning() ?? false;
  }

  /**
   * (Re)starts the bridge. Two starts in a row must not leave two bridges behind: a start superseded while it
   * waits for the old process to stop gives up, and one superseded while its process comes up stops it.
   */
  async start(launch: BridgeLaunch, cwd: string | undefined, opts: { resume: boolean; resetCrashes?: boolean }): Promise<void> {
    const generation = ++this.generation;
    this.clearRestartTimer();
    if (opts.resetCrashes) this.crashes.reset();
    await this.stopCurrent();
    if (generation !== this.generation) return;
    this.launch = launch;
    this.cwd = cwd;
    await this.run(generation, opts.resume);
  }

  async stop(): Promise<void> {
    this.generation++;
    this.clearRestartTimer();
    await this.stopCurrent();
  }

  dispose(): void {
    void this.stop();
  }

  private async run(generation: number, resume: boolean): Promise<void> {
    const launch = this.launch;
    if (!launch) return;
    const current = (): boolean => generation === this.generation;
    let exit: Exit | undefined;
    let stderrTail = "";
    const exited = new Promise<Exit>((resolve) => {
      this.exitWaiter = (e) => resolve(e);
    });
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file" }],
      outputChannel: this.output,
      revealOutputChannelOn: RevealOutputChannelOn.Never, // our own messages offer "Show Log"
      initializationOptions: launch.options,
      initializationFailedHandler: () => false,
      errorHandler: this.errorHandler(current, () => exit, exited, () => stderrTail),
    };
    const serverOptions = (): Promise<ChildProcess> =>
      new Promise((resolve, reject) => {
        // No `--stdio`: `agent-bridge serve` uses stdio anyway.
        const child = spawn(launch.command, launch.args, { cwd: this.cwd, stdio: ["pipe", "pipe", "pipe"], windowsHide: true });
        child.stderr.on("data", (d: Buffer) => (stderrTail = (stderrTail + d.toString()).slice(-4000)));
        child.once("spawn", () => {
          if (current()) this.process = child;
          resolve(child);
        });
        child.once("error", (err) => reject(err));
        child.once("exit", (code, signal) => {
          exit = { code, signal };
          if (this.process === child) this.exitWaiter?.(exit);
        });
      });
    const client = new QuietLanguageClient("agentBridge", "Agent Bridge", serverOptions, clientOptions);
    this.client = client;
    this.log.info(`Starting: ${describeCommand(launch)}${this.cwd ? ` (cwd ${this.cwd})` : ""}`);
    try {
      await client.start();
    } catch (err) {
      if (!current()) return;
      this.client = undefined;
      const reason = startFailure(err, exit, stderrTail);
      // A restart after a crash that fails again is one more crash (it may pass); a first start is a failure.
      if (resume && this.crashes.count > 0) this.crashed(generation, reason);
      else this.fail(launch, reason);
      return;
    }
    if (!current()) {
      this.log.info(`Stopping ${describeCommand(launch)}: a newer start replaced it`);
      await this.stopClient(client);
      return;
    }
    this.readyAt = Date.now();
    const info = client.initializeResult?.serverInfo;
    this.log.info(`Started ${info?.name ?? "bridge"} ${info?.version ?? ""} (pid ${this.process?.pid ?? "?"})`);
    this.onEvent({ kind: "ready", connection: client, resume });
  }

  private exitWaiter: ((e: Exit) => void) | undefined;

  private errorHandler(current: () => boolean, exit: () => Exit | undefined, exited: Promise<Exit>, stderr: () => string): ErrorHandler {
    return {
      error: (error) => {
        this.log.error(`Connection error: ${error.message}`);
        return { action: ErrorAction.Continue, handled: true };
      },
      closed: () => {
        if (current() && this.readyAt > 0) {
          // The process's exit usually follows the closed pipe by a moment: wait for it to say how it ended.
          const generation = this.generation;
          void Promise.race([exited, new Promise<undefined>((r) => setTimeout(() => r(undefined), 1500))]).then((e) => {
            if (generation === this.generation) this.crashed(generation, describeExit(e ?? exit(), stderr()));
          });
        }
        return { action: CloseAction.DoNotRestart, handled: true };
      },
    };
  }

  private crashed(generation: number, reason: string): void {
    const { count, delayMs: delay } = this.crashes.record(Date.now(), this.readyAt);
    this.readyAt = 0;
    this.client = undefined;
    this.process = undefined;
    if (delay === undefined) {
      this.log.error(`The bridge ${reason}. ${givenUp(count)}`);
      this.onEvent({ kind: "crashed", reason });
      void vscode.window
        .showErrorMessage(`Agent Bridge: the bridge ${reason}. ${givenUp(count)}`, "Restart", "Show Log")
        .then((choice) => {
          if (choice === "Restart") void vscode.commands.executeCommand("agentBridge.restart");
          if (choice === "Show Log") this.log.show();
        });
      return;
    }
    this.log.warn(`The bridge ${reason}; restarting in ${delay} ms (restart ${count} of ${maxCrashes} in a row).`);
    this.onEvent({ kind: "crashed", reason, restart: { inMs: delay, attempt: count, of: maxCrashes } });
    this.clearRestartTimer();
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (generation === this.generation) void this.run(generation, true);
    }, delay);
  }

  /**
   * Stops the running client. One still starting is left to its own `run`, which stops it once it is up. The
   * conversation lets go of it at once, before it has stopped: said after, a start that superseded this one may
   * already be up (a bridge that answers `initialize` early is ready in ~50 ms), and "stopped" would detach the
   * conversation from the new bridge — the panel said "starting the bridge…" forever.
   */
  private async stopCurrent(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.readyAt = 0;
    this.onEvent({ kind: "stopped" });
    if (client) await this.stopClient(client);
  }

  private async stopClient(client: LanguageClient): Promise<void> {
    const child = this.process;
    this.process = undefined;
    if (client.isRunning()) {
      try {
        await client.stop(2000);
      } catch (err) {
        this.log.warn(`Stopping the bridge: ${errorMessage(err)}`);
      }
    }
    // We spawned it, so the client does not kill it: a bridge that ignores `exit` is killed.
    if (child && child.exitCode === null && child.signalCode === null) {
      const gone = new Promise<void>((r) => child.once("exit", () => r()));
      const timer = setTimeout(() => child.kill("SIGKILL"), 2000);
      await gone;
      clearTimeout(timer);
    }
  }

  private clearRestartTimer(): void {
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
  }

  private fail(launch: BridgeLaunch, reason: string): void {
    const override = launch.source !== "bundled";
    const message =
      launch.source === "serverCommand"
        ? `Agent Bridge could not start agentBridge.serverCommand \`${describeCommand(launch)}\`: ${reason}. Check the setting, or clear it to use the bundled bridge.`
        : launch.source === "path"
          ? `Agent Bridge could not start \`${describeCommand(launch)}\`: ${reason}. This build carries no bridge: install agent-bridge on PATH or set agentBridge.serverCommand.`
          : `Agent Bridge: the bridge could not start: ${reason}.`;
    this.log.error(message);
    this.onEvent({ kind: "failed", message: reason });
    const actions = override ? ["Open Settings", "Show Log"] : ["Show Log", "Restart"];
    void vscode.window.showErrorMessage(message, ...actions).then((choice) => {
      if (choice === "Show Log") this.log.show();
      if (choice === "Restart") void vscode.commands.executeCommand("agentBridge.restart");
      if (choice === "Open Settings") void vscode.commands.executeCommand("workbench.action.openSettings", "agentBridge.serverCommand");
    });
  }
}

function describeExit(exit: Exit | undefined, stderr: string): string {
  const last = stderr.trim().split("\n").filter((l) => l.trim()).pop();
  let how: string;
  if (!exit) how = "closed its connection";
  else if (exit.signal) how = `was killed (${exit.signal})`;
  else how = `exited with code ${exit.code ?? "?"}`;
  return exit?.code && last ? `${how}: ${last.slice(0, 300)}` : how;
}

function startFailure(err: unknown, exit: Exit | undefined, stderr: string): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === "ENOENT") return "the program was not found";
  if (code === "EACCES") return "the program is not executable";
  const last = stderr.trim().split("\n").filter((l) => l.trim()).pop();
  if (exit) return `it ${describeExit(exit, "")} before it was ready${last ? `: ${last.slice(0, 300)}` : ""}`;
  return errorMessage(err);
}
