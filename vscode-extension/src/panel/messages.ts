import type { PanelAction, PanelState } from "./state";

/** Extension host → webview. */
export type ToWebview =
  | { type: "reset"; state: PanelState }
  | { type: "action"; action: PanelAction }
  | { type: "context"; label?: string }
  | { type: "focusInput" };

/** Webview → extension host. */
export type FromWebview =
  | { type: "ready" }
  | { type: "submit"; text: string; attachContext: boolean }
  | { type: "cancel" }
  | { type: "permission"; id: string; optionId: string; feedback?: string }
  | { type: "openDiff"; id: string }
  | { type: "setMode"; modeId: string }
  | { type: "newSession" };
