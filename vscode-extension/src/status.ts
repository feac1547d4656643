import * as vscode from "vscode";
import type { Disposable } from "./events";
import type { ConnectionStatus } from "./panel/state";
import type { PanelStore } from "./panel/store";
import type { TurnPhase } from "./session";

/**
 * The status-bar item: the connection; while the shown conversation's turn runs, a Stop item that runs
 * `agentBridge.cancel`; a question that waits for an answer (in any tab) and a turn that ended while nobody
 * looked; and Bypass permissions, which is never shown as a plain "ready".
 */
export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("agentBridge.status", vscode.StatusBarAlignment.Left, 50);
  private connection: ConnectionStatus = "starting";
  private phase: TurnPhase = "idle";
  private detail = "";
  private model: string | undefined;
  private mode: string | undefined;
  private waiting = 0;
  private attention: string | undefined;
  private following: Disposable | undefined;
  private rendered = "";

  constructor() {
    this.item.name = "Agent Bridge";
    this.render();
    this.item.show();
  }

  /** Shows the connection, turn phase and mode of `store` (the shown conversation's), as they change. */
  follow(store: PanelStore): void {
    this.following?.dispose();
    const read = (): void => {
      const state = store.state;
      this.connection = state.connection.status;
      this.detail = state.connection.message ?? "";
      this.mode = state.modes?.currentModeId;
      if (state.phase !== this.phase) this.setPhase(state.phase);
      else this.render();
    };
    this.following = store.onAction((action) => {
      if (action.type === "connection" || action.type === "phase" || action.type === "update" || action.type === "sessionStarted") read();
    });
    read();
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

  /** How many questions wait for an answer, in every tab. */
  setWaiting(count: number): void {
    if (count === this.waiting) return;
    this.waiting = count;
    this.render();
  }

  /** A turn that ended while nobody looked (undefined: seen). */
  setAttention(text: string | undefined): void {
    this.attention = text;
    this.render();
  }

  dispose(): void {
    this.following?.dispose();
    this.item.dispose();
  }

  /** What the item shows now; set on the item only when it changed (each set is a message to the workbench). */
  private render(): void {
    const key = JSON.stringify([this.connection, this.phase, this.detail, this.model, this.mode, this.waiting, this.attention]);
    if (key === this.rendered) return;
    this.rendered = key;
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
    } else if (this.waiting > 0) {
      item.text = `$(question) Agent: waiting for you${this.waiting > 1 ? ` (${this.waiting})` : ""}`;
      item.tooltip = "A question waits for your answer: click to show the panel.";
      item.command = "agentBridge.conversation.focus";
      item.backgroundColor = new vscode.ThemeColor("statusBarItem.warningBackground");
    } else if (this.phase !== "idle") {
      item.text = this.phase === "cancelling" ? "$(loading~spin) Agent: stopping… (again to force)" : "$(debug-stop) Agent: running — Stop";
      item.tooltip = "Cancel the running turn (Escape in the panel). A second cancel forces.";
      item.command = "agentBridge.cancel";
      item.backgroundColor = new vscode.ThemeColor("statusBarItem.warningBackground");
    } else if (this.attention) {
      item.text = this.attention;
      item.tooltip = "A turn ended while you were away: click to show the panel.";
      item.command = "agentBridge.conversation.focus";
    } else {
      const bypass = this.mode === "bypassPermissions";
      item.text = `${bypass ? "$(warning)" : "$(hubot)"} Agent Bridge${this.model ? ` · ${this.model}` : ""}${bypass ? " · bypass" : ""}`;
      item.tooltip = `Agent Bridge is ready${this.model ? ` (model ${this.model})` : ""}.${bypass ? " Bypass permissions: every tool call runs without asking." : ""} Click to choose the model.`;
      item.command = "agentBridge.selectModel";
      if (bypass) item.backgroundColor = new vscode.ThemeColor("statusBarItem.errorBackground");
    }
  }
}
