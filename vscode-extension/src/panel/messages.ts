import type { ChangedFile, ContentBlock, ImageContent, RewindMode, RewindPreview, RewindResolution } from "../protocol";
import type { TurnPhase } from "../session";
import type { PanelAction, PanelState } from "./state";

/** A workspace file offered for an @-mention: its path relative to its workspace folder (or absolute). */
export interface FileChoice {
  path: string;
}

/** A conversation's tab: its title, whether it is shown, runs a turn, or waits for an answer. */
export interface TabInfo {
  id: string;
  title: string;
  active: boolean;
  phase: TurnPhase;
  waiting: boolean;
}

/**
 * How the folder is trusted (VS Code's Workspace Trust): `restricted` — the project's own configuration
 * (hooks, env, allow rules, modes, directories, sandbox and network settings, MCP servers) is inert.
 */
export type FolderTrust = "trusted" | "restricted";

/** The rewind dialog of a user message: its preview (what will be restored, the conflicts, what no rewind undoes). */
export interface RewindDialog {
  turnId: string;
  /** The prompt's words (the dialog's title). */
  text: string;
  mode: RewindMode;
  /** Absent while it is being fetched. */
  preview?: RewindPreview;
  /** Why there is no preview, or the rewind failed. */
  error?: string;
}

/** The Changes view: the session's pending changes, or one prompt's (`turnId`), per file and hunk. */
export interface ChangesView {
  turnId?: string;
  /** "This session" or the prompt's words. */
  title: string;
  files: ChangedFile[];
  /** Absent while it is being fetched. */
  loaded: boolean;
  error?: string;
}

/** Extension host → webview. */
export type ToWebview =
  | { type: "reset"; state: PanelState }
  | { type: "action"; action: PanelAction }
  /** Several actions at once, in order (a stream's updates, batched by the host to spare the workbench). */
  | { type: "actions"; actions: PanelAction[] }
  /** The active editor's attachable context; `problems`: its diagnostics count. */
  | { type: "context"; label?: string; problems?: number }
  | { type: "focusInput" }
  /** The model the session runs (the header shows its name; clicking it runs agentBridge.selectModel). */
  | { type: "model"; model?: string; modelId?: string }
  /** Whether a session exists to send to (Send waits for it), and whether an API key is missing. */
  | { type: "sessionState"; ready: boolean; needsKey?: boolean }
  /** The conversations (tabs); the shown one is `active`. */
  | { type: "tabs"; tabs: TabInfo[] }
  /** Restricted Mode: what is off, said in the panel's banner. */
  | { type: "trust"; trust: FolderTrust }
  /** The workspace folders' paths (to show paths relative to them). */
  | { type: "workspace"; folders: string[] }
  /** The answer to `findFiles`. */
  | { type: "files"; requestId: number; files: FileChoice[] }
  /** The answer to `checkPaths`: which of the asked paths name a file. */
  | { type: "paths"; status: Record<string, "exists" | "missing"> }
  /** An `openFile` whose file is not there. */
  | { type: "fileNotFound"; path: string }
  /** A line for the person, briefly (a review's conflicts, a fork that opened). */
  | { type: "toast"; text: string }
  /** The input's text (a rewound prompt comes back to be edited and sent again). */
  | { type: "draft"; text: string }
  /** The rewind dialog (none: closed). */
  | { type: "rewind"; dialog?: RewindDialog }
  /** The Changes view (none: closed). */
  | { type: "changes"; view?: ChangesView };

/** Webview → extension host. */
export type FromWebview =
  | { type: "ready" }
  | {
      type: "submit";
      text: string;
      attachContext: boolean;
      /** @-mentioned files (as `FileChoice.path`). */
      mentions?: string[];
      /** Attach the active file's diagnostics. */
      attachProblems?: boolean;
      /** Images pasted or dropped into the input. */
      images?: ImageContent[];
      /** Filled by the host from the mentions and problems, for `Conversation.submit`. */
      extra?: ContentBlock[];
    }
  | { type: "cancel" }
  /** A sub-agent card's Stop: that tool call alone. */
  | { type: "cancelToolCall"; toolCallId: string }
  | { type: "permission"; id: string; optionId: string; feedback?: string }
  | { type: "openDiff"; id: string }
  | { type: "setMode"; modeId: string }
  /** A new conversation (a tab of its own). */
  | { type: "newSession" }
  /** Show another conversation's tab. */
  | { type: "switchSession"; id: string }
  /** Close a conversation's tab (its running turn is cancelled). */
  | { type: "closeSession"; id: string }
  /** The context meter's Compact: the shown session's `/compact`. */
  | { type: "compact" }
  /** A file link: open `path` (absolute or workspace-relative) at `line` (1-based). */
  | { type: "openFile"; path: string; line?: number }
  /** @-mention completion: workspace files matching `query`. */
  | { type: "findFiles"; requestId: number; query: string }
  /** Which of these paths (from the markdown) name files, so they can become links. */
  | { type: "checkPaths"; paths: string[] }
  /** A code block's copy button. */
  | { type: "copy"; text: string }
  /** A command button (the welcome's "Set API key", the model name): one of the extension's own commands. */
  | { type: "command"; command: string }
  /** A user message's "Rewind": the preview of going back to before it (`mode`: what goes back). */
  | { type: "rewindPreview"; turnId: string; text: string; mode: RewindMode }
  /** The dialog's "Rewind": do it, with a decision for each conflict. */
  | { type: "rewindConfirm"; turnId: string; text: string; mode: RewindMode; resolutions: Record<string, RewindResolution> }
  /** The Changes view: the session's pending changes, or one prompt's. */
  | { type: "showChanges"; turnId?: string; title?: string }
  /** Keep or undo a change of the view: a hunk of a file, a whole file, or (no path) everything shown. */
  | { type: "review"; action: "keep" | "undo"; turnId?: string; path?: string; hunk?: number; hunkId?: string }
  /** A changed file in VS Code's diff editor (before the change ↔ the file now). */
  | { type: "openChange"; turnId?: string; path: string }
  /** A new conversation from before this prompt (the original untouched). */
  | { type: "fork"; turnId: string; text: string };
