import * as vscode from "vscode";
import { clientCapabilities, type McpServer, mcpServersFromSettings } from "./protocol";

/** What the user configured (`agentBridge.*`), read fresh each time. */
export interface ExtensionSettings {
  /** A development override: argv that starts `agent-bridge serve` instead of the bundled bridge. */
  serverCommand: string[];
  /** The Python the bundled bridge's venv is made with (empty: the Python extension's, else PATH). */
  pythonPath: string;
  offlineScenario: string;
  /** The model new sessions start with (empty: the bridge's default); applied by session/set_model. */
  model: string;
  permissionMode: string;
  maxTurns: number | undefined;
  additionalDirectories: string[];
  baseUrl: string;
}

export function readSettings(): ExtensionSettings {
  const config = vscode.workspace.getConfiguration("agentBridge");
  const text = (key: string): string => config.get<string>(key)?.trim() ?? "";
  const strings = (key: string): string[] => {
    const raw = config.get<unknown>(key);
    return Array.isArray(raw) ? raw.filter((a): a is string => typeof a === "string" && a.trim() !== "") : [];
  };
  const maxTurns = config.get<unknown>("maxTurns");
  return {
    serverCommand: strings("serverCommand"),
    pythonPath: text("pythonPath"),
    offlineScenario: text("offlineScenario"),
    model: text("model"),
    permissionMode: text("permissionMode"),
    maxTurns: typeof maxTurns === "number" && maxTurns > 0 ? Math.floor(maxTurns) : undefined,
    additionalDirectories: strings("additionalDirectories"),
    baseUrl: text("baseUrl"),
  };
}

const serverKeys = ["serverCommand", "pythonPath", "offlineScenario", "permissionMode", "maxTurns", "additionalDirectories", "baseUrl"];

export function affectsServer(e: vscode.ConfigurationChangeEvent): boolean {
  return serverKeys.some((k) => e.affectsConfiguration(`agentBridge.${k}`));
}

/** `initializationOptions.folderTrust`: "restricted" (VS Code's Restricted Mode) or "ask". */
export type FolderTrustOption = "restricted" | "ask";

/** How the bridge process is started; `options` become the LSP initializationOptions. */
export interface BridgeLaunch {
  command: string;
  args: string[];
  /** "serverCommand": the user's override; "bundled": the .vsix's own bridge in its private venv; "path": a
   * build without the bundle runs `agent-bridge` from PATH. */
  source: "serverCommand" | "bundled" | "path";
  options: Record<string, unknown>;
}

/**
 * The launch for a base command line (`serverCommand`, or the bundled venv's Python). The API key goes in the
 * initializationOptions, not the environment: the bridge's commands inherit its environment.
 */
export function launchFor(
  s: ExtensionSettings,
  base: { command: string; args: string[]; source: BridgeLaunch["source"] },
  apiKey: string | undefined,
  trust: FolderTrustOption = "ask",
): BridgeLaunch {
  const args = s.offlineScenario ? [...base.args, "--offline", s.offlineScenario] : base.args;
  // VS Code's Workspace Trust decides: a folder in Restricted Mode keeps its own agent configuration inert and is
  // never asked about; a trusted one may be asked about what its files would enable.
  const options: Record<string, unknown> = { clientCapabilities, folderTrust: trust };
  if (apiKey) options.apiKey = apiKey;
  if (s.baseUrl) options.baseUrl = s.baseUrl;
  if (s.model) options.model = s.model;
  if (s.permissionMode) options.permissionMode = s.permissionMode;
  if (s.maxTurns) options.maxTurns = s.maxTurns;
  if (s.additionalDirectories.length) options.additionalDirectories = s.additionalDirectories;
  return { command: base.command, args, source: base.source, options };
}

export function describeCommand(s: { command: string; args: string[] }): string {
  return [s.command, ...s.args].map((a) => (/\s/.test(a) ? JSON.stringify(a) : a)).join(" ");
}

/** The MCP servers new sessions get (`agentBridge.mcpServers`). */
export function readMcpServers(): McpServer[] {
  return mcpServersFromSettings(vscode.workspace.getConfiguration("agentBridge").get<unknown>("mcpServers"));
}
