import * as vscode from "vscode";
import type { TurnPhase } from "./session";
import type { ConnectionStatus } from "./panel/state";

/** The status-bar item: connection state; while a turn runs, a Stop item that runs `agentBridge.cancel`. */
export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("agentBridge.status", vscode.StatusBarAlignment.Left, 50);
  private connection: ConnectionStatus = "starting";
  private phase: TurnPhase = "idle";
  private detail = "";
  private model: string | undefined;

  constructor() {
    this.item.name = "Agent Bridge";
    this.render();
    this.item.show();
  }

  setConnection(status: ConnectionStatus, detail = ""): void {
    this.connection = status;
    this.detail = detail;
    this.render();
  }

  /** The session's model, shown beside the name (click: the model picker). */
  setModel(model: string | undefined): void {
    if (model === this.model) return;
    this.model = model;
    this.render();
  }

  setPhase(phase: TurnPhase): void {
    this.phase = phase;
    void vscode.commands.executeCommand("setContext", "agentBridge.turnRunning", phase !== "idle");
    this.render();
  }

  dispose(): void {
    this.item.dispose();
  }

  private render(): void {
    const item = this.item;
    item.backgroundColor = undefined;
    if (this.connection === "failed") {
      item.text = "$(error) Agent Bridge";
      item.tooltip = `The bridge is not running: ${this.detail}\nClick to show the log; “Agent Bridge: Restart” tries again.`;
      item.command = "agentBridge.showLog";
      item.backgroundColor = new vscode.ThemeColor("statusBarItem.errorBackground");
    } else if (this.connection === "starting") {
      item.text = "$(loading~spin) Agent Bridge";
      item.tooltip = this.detail ? `Agent Bridge: ${this.detail}` : "Starting the bridge…";
      item.command = "agentBridge.showLog";
    } else if (this.connection === "stopped") {
      item.text = "$(circle-slash) Agent Bridge";
      item.tooltip = "The bridge stopped. Click to show the log.";
      item.command = "agentBridge.showLog";
    } else if (this.phase !== "idle") {
      item.text = this.phase === "cancelling" ? "$(loading~spin) Agent: stopping… (again to force)" : "$(debug-stop) Agent: running — Stop";
      item.tooltip = "Cancel the running turn (Escape in the panel). A second cancel forces.";
      item.command = "agentBridge.cancel";
      item.backgroundColor = new vscode.ThemeColor("statusBarItem.warningBackground");
    } else {
      item.text = this.model ? `$(hubot) Agent Bridge · ${this.model}` : "$(hubot) Agent Bridge";
      item.tooltip = `Agent Bridge is ready${this.model ? ` (model ${this.model})` : ""}. Click to choose the model.`;
      item.command = "agentBridge.selectModel";
    }
  }
}
