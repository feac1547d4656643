import * as vscode from "vscode";
import { LogLines } from "./logLines";

const secretName = "agentBridge.anthropicApiKey";

/**
 * The Anthropic API key, kept in VS Code's SecretStorage (the OS keychain where there is one): never in a
 * settings file, never logged. `redact` is applied to everything the bridge's output channel shows.
 */
export class ApiKeyStore implements vscode.Disposable {
  private cached: string | undefined;
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChange = this.changed.event;
  private readonly subscription: vscode.Disposable;

  constructor(private readonly secrets: vscode.SecretStorage) {
    this.subscription = secrets.onDidChange((e) => {
      if (e.key !== secretName) return;
      void this.get().then(() => this.changed.fire());
    });
  }

  async get(): Promise<string | undefined> {
    this.cached = (await this.secrets.get(secretName))?.trim() || undefined;
    return this.cached;
  }

  /** Asks for a key (a password box) and stores it; false when the user cancels. */
  async prompt(): Promise<boolean> {
    const key = await vscode.window.showInputBox({
      title: "Agent Bridge: Anthropic API key",
      prompt: "Stored in VS Code's secret storage (not in settings). Get a key at console.anthropic.com.",
      placeHolder: "sk-ant-…",
      password: true,
      ignoreFocusOut: true,
      validateInput: (v) => (v.trim() ? undefined : "Enter a key, or press Escape to cancel"),
    });
    if (key === undefined || !key.trim()) return false;
    await this.secrets.store(secretName, key.trim());
    this.cached = key.trim();
    return true;
  }

  async clear(): Promise<void> {
    await this.secrets.delete(secretName);
    this.cached = undefined;
  }

  /** The text with the key (and anything shaped like an Anthropic key) replaced. */
  redact(text: string): string {
    let out = text;
    if (this.cached && this.cached.length >= 8) out = out.split(this.cached).join("«api key»");
    return out.replace(/sk-ant-[A-Za-z0-9_-]{8,}/g, "«api key»");
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}

/**
 * An OutputChannel for vscode-languageclient, which writes the bridge's stderr into it chunk by chunk: whole lines
 * reach the log, redacted (a key split between two chunks is redacted too), each at the bridge's own level.
 */
export function redactingChannel(log: vscode.LogOutputChannel, keys: ApiKeyStore): vscode.OutputChannel {
  const lines = new LogLines({ line: (level, text) => log[level](keys.redact(text)) });
  return {
    name: log.name,
    append: (value: string) => lines.push(value),
    appendLine: (value: string) => {
      lines.flush();
      log.appendLine(keys.redact(value));
    },
    replace: (value: string) => {
      lines.flush();
      log.replace(keys.redact(value));
    },
    clear: () => log.clear(),
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- one implementation serves both overloads
    show: (preserveFocus?: unknown) => log.show(typeof preserveFocus === "boolean" ? preserveFocus : undefined),
    hide: () => log.hide(),
    dispose: () => lines.flush(), // the extension owns the log channel
  };
}
