import * as vscode from "vscode";
import { type McpServer, mcpServersFromSettings } from "./protocol";

export interface BridgeSettings {
  command: string;
  args: string[];
}

/**
 * The command line that starts `agent-bridge serve`: `serverCommand` as given, else `<pythonPath> -m
 * bridge.cli.main serve`, else `agent-bridge serve` from PATH; `offlineScenario` adds `--offline <name>`.
 */
export function readSettings(): BridgeSettings {
  const config = vscode.workspace.getConfiguration("agentBridge");
  const serverCommand = config.get<unknown>("serverCommand");
  const pythonPath = config.get<string>("pythonPath")?.trim() ?? "";
  const scenario = config.get<string>("offlineScenario")?.trim() ?? "";
  const argv = Array.isArray(serverCommand) ? serverCommand.filter((a): a is string => typeof a === "string" && a !== "") : [];
  let command: string;
  let args: string[];
  if (argv.length > 0) {
    [command, ...args] = argv as [string, ...string[]];
  } else if (pythonPath) {
    command = pythonPath;
    args = ["-m", "bridge.cli.main", "serve"];
  } else {
    command = "agent-bridge";
    args = ["serve"];
  }
  if (scenario) args = [...args, "--offline", scenario];
  return { command, args };
}

export function affectsServer(e: vscode.ConfigurationChangeEvent): boolean {
  return ["serverCommand", "pythonPath", "offlineScenario"].some((k) => e.affectsConfiguration(`agentBridge.${k}`));
}

export function describeCommand(s: BridgeSettings): string {
  return [s.command, ...s.args].map((a) => (/\s/.test(a) ? JSON.stringify(a) : a)).join(" ");
}

/** The MCP servers new sessions get (`agentBridge.mcpServers`). */
export function readMcpServers(): McpServer[] {
  return mcpServersFromSettings(vscode.workspace.getConfiguration("agentBridge").get<unknown>("mcpServers"));
}
