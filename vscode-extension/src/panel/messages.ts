import type { PanelAction, PanelState } from "./state";

/** Extension host → webview. */
export type ToWebview =
  | { type: "reset"; state: PanelState }
  | { type: "action"; action: PanelAction }
  | { type: "context"; label?: string }
  | { type: "focusInput" }
  | { type: "session"; session: PanelSession };

/**
 * The session as the host sees it (sent on every change and to a webview that says `ready`). Send is for
 * `ready`; before that a prompt is queued by the host and sent once the session exists (`queued` of them).
 */
export interface PanelSession {
  status: "starting" | "installing" | "ready" | "restarting" | "failed";
  /** Why it is not ready, in a few words ("setting up the bridge (first start)…", "the bridge restarts…"). */
  detail?: string;
  /** The model the session runs (its id); `agentBridge.selectModel` changes it. */
  model?: string;
  queued: number;
  /** No API key is set (and no offline scenario): the welcome screen offers "Set API Key" and "Try offline". */
  needsKey: boolean;
}

/** The host commands the panel may run (its buttons: welcome screen, model picker, restart). */
export const panelCommands = ["agentBridge.setApiKey", "agentBridge.tryOffline", "agentBridge.selectModel", "agentBridge.restart", "agentBridge.showLog"] as const;
export type PanelCommand = (typeof panelCommands)[number];

/** Webview → extension host. */
export type FromWebview =
  | { type: "ready" }
  | { type: "submit"; text: string; attachContext: boolean }
  | { type: "cancel" }
  | { type: "permission"; id: string; optionId: string; feedback?: string }
  | { type: "openDiff"; id: string }
  | { type: "setMode"; modeId: string }
  | { type: "newSession" }
  | { type: "runCommand"; command: PanelCommand };
