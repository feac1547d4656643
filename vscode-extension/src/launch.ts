import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import {
  type BridgeManifest,
  ensureBridge,
  findPython,
  InstallError,
  NoSuitablePython,
  pathCandidates,
  type PythonCandidate,
  readManifest,
  venvPython,
} from "./bridgeInstall";
import { bundledArgs } from "./bridgeArgs";
import type { BridgeLaunch, ExtensionSettings } from "./settings";

/** A start that cannot happen, with the message and the buttons that help. */
export class LaunchError extends Error {
  constructor(
    message: string,
    readonly actions: { title: string; run: () => unknown }[],
  ) {
    super(message);
  }
}

type Base = Pick<BridgeLaunch, "command" | "args" | "source">;

/**
 * The command line of the bridge: `agentBridge.serverCommand` when set (development), else the bridge the
 * .vsix carries, installed on first use into a private venv (a progress notification says so), else — a
 * build without the bundle — `agent-bridge serve` from PATH.
 */
export async function resolveBridge(
  context: vscode.ExtensionContext,
  settings: ExtensionSettings,
  log: vscode.LogOutputChannel,
  onInstalling: () => void,
): Promise<Base> {
  if (settings.serverCommand.length) {
    const [command, ...args] = settings.serverCommand as [string, ...string[]];
    return { command, args, source: "serverCommand" };
  }
  const manifest = readManifest(context.extensionPath);
  if (!manifest) return { command: "agent-bridge", args: ["serve"], source: "path" };
  const storagePath = context.globalStorageUri.fsPath;
  const installed = installedPython(storagePath, manifest);
  if (installed) return { command: installed, args: bundledArgs(), source: "bundled" };
  onInstalling();
  try {
    const bridge = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: "Agent Bridge: setting up the bridge (first start)" },
      (progress) =>
        ensureBridge({
          extensionPath: context.extensionPath,
          storagePath,
          manifest,
          python: async () => findPython(await pythonCandidates(settings, log)),
          log: { info: (m) => log.info(m), warn: (m) => log.warn(m) },
          report: (message) => progress.report({ message }),
        }),
    );
    return { command: bridge.python, args: bundledArgs(), source: "bundled" };
  } catch (err) {
    throw explain(err);
  }
}

function installedPython(storagePath: string, manifest: BridgeManifest): string | undefined {
  // ensureBridge answers at once for an installed bridge; this only avoids flashing a progress notification.
  const dir = path.join(storagePath, "bridge", `${manifest.version}-${manifest.sha256.slice(0, 12)}`);
  const python = venvPython(dir);
  return fs.existsSync(path.join(dir, "agent-bridge-install.json")) && fs.existsSync(python) ? python : undefined;
}

interface PythonExtensionApi {
  environments?: {
    getActiveEnvironmentPath?(resource?: vscode.Uri): { path: string } | undefined;
    resolveEnvironment?(env: { path: string }): Promise<{ executable?: { uri?: vscode.Uri } } | undefined>;
  };
  settings?: { getExecutionDetails?(resource?: vscode.Uri): { execCommand?: string[] } | undefined };
}

/** agentBridge.pythonPath, then the Python extension's interpreter for the workspace, then PATH. */
async function pythonCandidates(settings: ExtensionSettings, log: vscode.LogOutputChannel): Promise<PythonCandidate[]> {
  const candidates: PythonCandidate[] = [];
  if (settings.pythonPath) candidates.push({ command: settings.pythonPath, source: "agentBridge.pythonPath" });
  const fromExtension = await pythonExtensionInterpreter().catch((err: unknown) => {
    log.warn(`The Python extension did not say its interpreter: ${String(err)}`);
    return undefined;
  });
  if (fromExtension) candidates.push({ command: fromExtension, source: "the Python extension" });
  return [...candidates, ...pathCandidates()];
}

async function pythonExtensionInterpreter(): Promise<string | undefined> {
  const ext = vscode.extensions.getExtension<PythonExtensionApi>("ms-python.python");
  if (!ext) return undefined;
  const api = ext.isActive ? ext.exports : await withTimeout(Promise.resolve(ext.activate()), 15000);
  if (!api) return undefined;
  const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
  const active = api.environments?.getActiveEnvironmentPath?.(resource);
  if (active) {
    const resolved = await withTimeout(api.environments?.resolveEnvironment?.(active) ?? Promise.resolve(undefined), 10000);
    return resolved?.executable?.uri?.fsPath ?? active.path;
  }
  return api.settings?.getExecutionDetails?.(resource)?.execCommand?.[0];
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  return Promise.race([promise, new Promise<undefined>((r) => setTimeout(() => r(undefined), ms))]);
}

function explain(err: unknown): LaunchError {
  const settings = { title: "Open Settings", run: () => vscode.commands.executeCommand("workbench.action.openSettings", "agentBridge.pythonPath") };
  const retry = { title: "Retry", run: () => vscode.commands.executeCommand("agentBridge.restart") };
  if (err instanceof NoSuitablePython) {
    const actions: { title: string; run: () => unknown }[] = [{ title: "Get Python", run: () => vscode.env.openExternal(vscode.Uri.parse("https://www.python.org/downloads/")) }];
    if (vscode.extensions.getExtension("ms-python.python")) actions.push({ title: "Select Interpreter", run: () => vscode.commands.executeCommand("python.setInterpreter") });
    actions.push(settings, retry);
    const tried = err.tried.map((t) => `${t.candidate.command}: ${t.found}`).join("; ");
    return new LaunchError(
      `Agent Bridge needs Python 3.11 or newer to run its bridge, and found none (${tried}). Install one (python.org, your package manager, or pyenv), or point agentBridge.pythonPath at it, then Retry.`,
      actions,
    );
  }
  const message = err instanceof InstallError ? err.message : `Setting up the bridge failed: ${String(err instanceof Error ? err.message : err)}`;
  return new LaunchError(`Agent Bridge: ${message.split("\n")[0]}`, [{ title: "Show Log", run: () => vscode.commands.executeCommand("agentBridge.showLog") }, retry]);
}
