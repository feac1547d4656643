import * as vscode from "vscode";
import type { ApiKeyStore } from "./apiKey";
import type { BridgeClient, ClientEvent } from "./client";
import type { Conversations } from "./conversations";
import type { Disposable } from "./events";
import { LaunchError, resolveBridge } from "./launch";
import { serverKey } from "./serverKey";
import { affectsServer, type ExtensionSettings, launchFor, readSettings } from "./settings";

/**
 * When the bridge starts and restarts, and what the conversation hears of it: the first start, the Restart
 * command, and a settings or key change (which restarts it keeping the conversation; during a turn, once the
 * turn ends). A configuration event that leaves the server settings as they were (a settings file saved twice,
 * an unrelated key) does not restart the bridge under a running turn.
 */
export class BridgeLifecycle implements vscode.Disposable {
  /** The server settings of the last start (undefined: it did not start). */
  private startedWith: string | undefined;
  /** Whether the folder was trusted when the bridge started. */
  private startedTrusted = false;
  /** What the panel says when the restarted bridge has the session again. */
  private resumeNotice: string | undefined;
  /** The notice says only that the conversation goes on: a conversation with nothing in it yet keeps its welcome. */
  private noticeIfBlank = true;
  private restartWhenIdle = false;
  /** Counts calls of `start`: one that a newer call overtook while it awaited gives way to it. */
  private starts = 0;
  private readonly subscriptions: Disposable[];

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly client: BridgeClient,
    private readonly conversation: Conversations,
    private readonly keys: ApiKeyStore,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.subscriptions = [
      conversation.onTabPhase(({ phase }) => {
        if (phase === "idle" && this.restartWhenIdle) this.restartForSettings();
      }),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (affectsServer(e)) void this.settingsChanged();
      }),
      // A key set, changed or removed (here or in another window) is a server setting too.
      keys.onDidChange(() => void this.settingsChanged()),
      // Trusting the folder turns its configuration on (its VS Code settings too, which may come first as a
      // configuration change): one restart with it, the conversation going on.
      vscode.workspace.onDidGrantWorkspaceTrust(() => void this.settingsChanged()),
    ];
  }

  /** What the bridge client reports, for the conversation. */
  readonly onClientEvent = (event: ClientEvent): void => {
    if (event.kind === "ready") {
      const notice = event.resume ? (this.resumeNotice ?? "The bridge is back; the conversation goes on.") : undefined;
      const ifBlank = this.noticeIfBlank;
      this.resumeNotice = undefined;
      this.noticeIfBlank = true;
      void this.conversation.attach(event.connection, { resume: event.resume, notice, noticeIfBlank: ifBlank });
    } else if (event.kind === "crashed") {
      this.conversation.crashed(event.reason, event.restart);
    } else if (event.kind === "failed") {
      this.startedWith = undefined;
      this.conversation.failed(event.message);
    } else {
      this.conversation.detach();
    }
  };

  /** (Re)starts the bridge with the settings and key as they are now; `resume` keeps the conversation. */
  async start(opts: { resume: boolean; notice?: string; noticeIfBlank?: boolean }): Promise<void> {
    const started = ++this.starts;
    const settings = readSettings();
    const key = await this.keys.get();
    // Two starts at once (trusting a folder is a trust event and a configuration change): the newer one's
    // settings are the ones that hold, whichever of the two finishes its awaits first.
    if (started !== this.starts) return;
    if (opts.resume && vscode.workspace.isTrusted && !this.startedTrusted) this.log.info("The workspace is trusted now: restarting the bridge with the folder's configuration");
    this.startedWith = this.currentKey(settings, key);
    this.startedTrusted = vscode.workspace.isTrusted;
    this.conversation.setNeedsKey(!key && !process.env.ANTHROPIC_API_KEY && !settings.offlineScenario);
    this.conversation.starting("starting");
    this.resumeNotice = opts.notice;
    this.noticeIfBlank = opts.noticeIfBlank ?? true;
    let base;
    try {
      base = await resolveBridge(this.context, settings, this.log, () => this.conversation.starting("installing", "setting up the bridge (first start)…"));
    } catch (err) {
      const problem = err instanceof LaunchError ? err : new LaunchError(String(err), []);
      this.startedWith = undefined;
      this.log.error(problem.message);
      this.conversation.failed(problem.message);
      void vscode.window.showErrorMessage(problem.message, ...problem.actions.map((a) => a.title)).then((choice) => problem.actions.find((a) => a.title === choice)?.run());
      return;
    }
    if (started !== this.starts) return;
    await this.client.start(launchFor(settings, base, key, vscode.workspace.isTrusted ? "ask" : "restricted"), vscode.workspace.workspaceFolders?.[0]?.uri.fsPath, { resume: opts.resume, resetCrashes: true });
  }

  restart(): Promise<void> {
    return this.start({ resume: true, notice: "The bridge restarted; the conversation goes on." });
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
  }

  /**
   * A settings change restarts the bridge (keeping the conversation); during a turn, once it ends. `next` is the
   * server settings it restarts with: taken as started now, so that the events that say the same change (trusting
   * a folder is a trust event and a configuration change) make one restart, not two.
   */
  private restartForSettings(next?: string): void {
    if (next !== undefined) this.startedWith = next;
    if (this.conversation.busy) {
      if (!this.restartWhenIdle) for (const tab of this.conversation.all) if (tab.busy) tab.store.dispatch({ type: "notice", text: "Settings changed: the bridge restarts when this turn ends." });
      this.restartWhenIdle = true;
      return;
    }
    this.restartWhenIdle = false;
    const trusted = vscode.workspace.isTrusted && !this.startedTrusted;
    const notice = trusted
      ? "This folder is trusted now: the bridge restarted with its own configuration; the conversation goes on."
      : "Settings changed: the bridge restarted with them; the conversation goes on.";
    // "Try it offline" or a key set before the first message: the welcome (and its hint) stays, no notice.
    void this.start({ resume: true, notice, noticeIfBlank: trusted });
  }

  private async settingsChanged(): Promise<void> {
    const current = this.currentKey(readSettings(), await this.keys.get());
    if (current !== this.startedWith) this.restartForSettings(current);
  }

  /** The server settings, the key, and whether the folder is trusted (a bridge runs with all three). */
  private currentKey(settings: ExtensionSettings, key: string | undefined): string {
    return `${serverKey(settings, key)}|trusted=${String(vscode.workspace.isTrusted)}`;
  }
}

/** First run without any key: say what is needed, and offer the offline playground. Once per install. */
export async function offerKey(context: vscode.ExtensionContext, keys: ApiKeyStore): Promise<void> {
  const settings = readSettings();
  if ((await keys.get()) || process.env.ANTHROPIC_API_KEY || settings.offlineScenario || context.globalState.get("agentBridge.keyOffered")) return;
  await context.globalState.update("agentBridge.keyOffered", true);
  const choice = await vscode.window.showInformationMessage(
    "Agent Bridge needs an Anthropic API key to talk to Claude. You can also try it offline with a built-in playground model.",
    "Set API Key",
    "Try It Offline",
  );
  if (choice === "Set API Key") await vscode.commands.executeCommand("agentBridge.setApiKey");
  if (choice === "Try It Offline") await vscode.commands.executeCommand("agentBridge.tryOffline");
}
