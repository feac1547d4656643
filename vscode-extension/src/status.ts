import * as vscode from "vscode";
import type { TurnPhase } from "./session";
import type { ConnectionStatus } from "./panel/state";

/** The status-bar item: connection state; while a turn runs, a Stop item that runs `agentBridge.cancel`. */
export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("agentBridge.status", vscode.StatusBarAlignment.Left, 50);
  private connection: ConnectionStatus = "starting";
  private phase: TurnPhase = "idle";
  private detail = "";

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
      item.tooltip = `The bridge could not start: ${this.detail}\nClick to show the log.`;
      item.command = "agentBridge.showLog";
      item.backgroundColor = new vscode.ThemeColor("statusBarItem.errorBackground");
    } else if (this.connection === "starting") {
      item.text = "$(loading~spin) Agent Bridge";
      item.tooltip = "Starting the bridge…";
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
      item.text = "$(hubot) Agent Bridge";
      item.tooltip = "Agent Bridge is ready. Click to show the log.";
      item.command = "agentBridge.showLog";
    }
  }
}
