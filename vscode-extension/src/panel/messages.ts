import type { ContentBlock, ImageContent } from "../protocol";
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
  | { type: "fileNotFound"; path: string };

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
  | { type: "command"; command: string };
