import * as vscode from "vscode";
import {
  CloseAction,
  ErrorAction,
  type ErrorHandler,
  LanguageClient,
  type LanguageClientOptions,
  RevealOutputChannelOn,
  type ServerOptions,
  State,
} from "vscode-languageclient/node";
import type { AgentConnection } from "./connection";
import { clientCapabilities } from "./protocol";
import { type BridgeSettings, describeCommand } from "./settings";
import { errorMessage } from "./session";

export type ClientEvent = { kind: "ready"; connection: AgentConnection } | { kind: "failed"; message: string } | { kind: "stopped" };

const maxRestarts = 2;

/**
 * Starts `agent-bridge serve` over stdio with vscode-languageclient. Open documents are synced (didOpen/
 * didChange/didClose for every file) so the bridge's Read sees unsaved text. A start failure is reported to
 * `onEvent` and shown with a "Show Log" action; it never throws.
 */
export class BridgeClient implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private restarts = 0;
  /** Bumped by every start and stop: a start that is no longer the newest gives way (see `start`). */
  private generation = 0;

  constructor(
    private readonly log: vscode.LogOutputChannel,
    private readonly onEvent: (e: ClientEvent) => void,
  ) {}

  /**
   * (Re)starts the bridge. Two settings changes in a row must not leave two bridges (and two sessions)
   * behind: a start superseded by a newer one while it waits for the old process to stop gives up, and one
   * superseded while its own process comes up stops that process instead of reporting it ready.
   */
  async start(settings: BridgeSettings, cwd: string | undefined): Promise<void> {
    const generation = ++this.generation;
    const current = (): boolean => generation === this.generation;
    await this.stopCurrent();
    if (!current()) return;
    this.restarts = 0;
    const serverOptions: ServerOptions = {
      command: settings.command,
      args: settings.args,
      // No `transport`: TransportKind.stdio would append `--stdio`, which `agent-bridge serve` rejects.
      options: cwd ? { cwd } : {},
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file" }],
      outputChannel: this.log,
      revealOutputChannelOn: RevealOutputChannelOn.Never, // our own message offers "Show Log"
      initializationOptions: { clientCapabilities },
      errorHandler: this.errorHandler(settings, current),
    };
    const client = new LanguageClient("agentBridge", "Agent Bridge", serverOptions, clientOptions);
    this.client = client;
    client.onDidChangeState((e) => {
      if (!current()) return;
      if (e.newState === State.Stopped) this.onEvent({ kind: "stopped" });
      if (e.newState === State.Running && e.oldState !== State.Running && this.restarts > 0) {
        this.onEvent({ kind: "ready", connection: client });
      }
    });
    this.log.info(`Starting: ${describeCommand(settings)}${cwd ? ` (cwd ${cwd})` : ""}`);
    try {
      await client.start();
    } catch (err) {
      if (current()) this.fail(settings, errorMessage(err));
      return;
    }
    if (!current()) {
      this.log.info(`Stopping ${describeCommand(settings)}: a newer start replaced it`);
      await this.stopClient(client);
      return;
    }
    this.log.info(`Started ${client.initializeResult?.serverInfo?.name ?? "bridge"} ${client.initializeResult?.serverInfo?.version ?? ""}`);
    this.onEvent({ kind: "ready", connection: client });
  }

  async stop(): Promise<void> {
    this.generation++;
    await this.stopCurrent();
  }

  dispose(): void {
    void this.stop();
  }

  /** Stops the running client. One still starting is left to its own `start`, which stops it once it is up. */
  private async stopCurrent(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) await this.stopClient(client);
  }

  private async stopClient(client: LanguageClient): Promise<void> {
    if (!client.isRunning()) return;
    try {
      await client.stop(2000);
    } catch (err) {
      this.log.warn(`Stopping the bridge: ${errorMessage(err)}`);
    }
  }

  private errorHandler(settings: BridgeSettings, current: () => boolean): ErrorHandler {
    return {
      error: (error) => {
        this.log.error(`Connection error: ${error.message}`);
        return { action: ErrorAction.Continue, handled: true };
      },
      closed: () => {
        if (!current()) return { action: CloseAction.DoNotRestart, handled: true };
        if (this.restarts < maxRestarts) {
          this.restarts++;
          this.log.warn(`The bridge exited; restarting (${this.restarts}/${maxRestarts}).`);
          return { action: CloseAction.Restart, handled: true };
        }
        this.fail(settings, "the process exited repeatedly");
        return { action: CloseAction.DoNotRestart, handled: true };
      },
    };
  }

  private fail(settings: BridgeSettings, reason: string): void {
    const message = `Agent Bridge could not start \`${describeCommand(settings)}\`: ${reason}. Set agentBridge.serverCommand or agentBridge.pythonPath.`;
    this.log.error(message);
    this.onEvent({ kind: "failed", message: reason });
    void vscode.window.showErrorMessage(message, "Show Log", "Open Settings").then((choice) => {
      if (choice === "Show Log") this.log.show();
      if (choice === "Open Settings") void vscode.commands.executeCommand("workbench.action.openSettings", "agentBridge");
    });
  }
}
