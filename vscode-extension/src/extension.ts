import * as vscode from "vscode";
import { ApiKeyStore, redactingChannel } from "./apiKey";
import { BridgeClient } from "./client";
import { registerCommands } from "./commands";
import { Conversation } from "./conversation";
import { ProposedEdits } from "./diffView";
import { EditorContext } from "./editorContext";
import { LaunchError, resolveBridge } from "./launch";
import { ConversationView } from "./panel/provider";
import { PanelStore } from "./panel/store";
import { PermissionRequests } from "./permissionRequests";
import { PermissionPrompter } from "./permissions";
import { serverKey } from "./serverKey";
import { affectsServer, launchFor, readSettings } from "./settings";
import { StatusBar } from "./status";

/** Wires the pieces together; every disposable goes into `context.subscriptions`. */
export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel("Agent Bridge", { log: true });
  const keys = new ApiKeyStore(context.secrets);
  const status = new StatusBar();
  const store = new PanelStore();
  const permissions = new PermissionRequests();
  const edits = new ProposedEdits();
  const editorContext = new EditorContext();
  const view = new ConversationView(context.extensionUri, store, editorContext);
  const prompter = new PermissionPrompter(permissions, edits, view);
  const conversation = new Conversation(store, permissions, editorContext, status, log);
  // The server settings of the last start: a configuration event that leaves them as they are (a settings
  // file saved twice, an unrelated key) must not restart the bridge under a running turn.
  let startedWith: string | undefined;
  /** What the panel says when the restarted bridge has the session again. */
  let resumeNotice: string | undefined;
  const client = new BridgeClient(log, redactingChannel(log, keys), (event) => {
    if (event.kind === "ready") {
      const notice = event.resume ? (resumeNotice ?? "The bridge is back; the conversation goes on.") : undefined;
      resumeNotice = undefined;
      void conversation.attach(event.connection, { resume: event.resume, notice });
    } else if (event.kind === "crashed") {
      conversation.crashed(event.reason, event.restartInMs);
    } else if (event.kind === "failed") {
      startedWith = undefined;
      conversation.failed(event.message);
    } else {
      conversation.detach();
    }
  });

  const startBridge = async (opts: { resume: boolean; notice?: string }): Promise<void> => {
    const settings = readSettings();
    const key = await keys.get();
    startedWith = serverKey(settings, key);
    conversation.setNeedsKey(!key && !process.env.ANTHROPIC_API_KEY && !settings.offlineScenario);
    conversation.starting("starting");
    resumeNotice = opts.notice;
    let base;
    try {
      base = await resolveBridge(context, settings, log, () => conversation.starting("installing", "setting up the bridge (first start)…"));
    } catch (err) {
      const problem = err instanceof LaunchError ? err : new LaunchError(String(err), []);
      startedWith = undefined;
      log.error(problem.message);
      conversation.failed(problem.message);
      void vscode.window.showErrorMessage(problem.message, ...problem.actions.map((a) => a.title)).then((choice) => problem.actions.find((a) => a.title === choice)?.run());
      return;
    }
    await client.start(launchFor(settings, base, key), vscode.workspace.workspaceFolders?.[0]?.uri.fsPath, { resume: opts.resume, resetCrashes: true });
  };

  /** A settings change restarts the bridge (keeping the conversation); during a turn, once it ends. */
  let restartWhenIdle = false;
  const restartForSettings = (): void => {
    if (conversation.busy) {
      if (!restartWhenIdle) store.dispatch({ type: "notice", text: "Settings changed: the bridge restarts when this turn ends." });
      restartWhenIdle = true;
      return;
    }
    restartWhenIdle = false;
    void startBridge({ resume: true, notice: "Settings changed: the bridge restarted with them; the conversation goes on." });
  };
  const settingsChanged = async (): Promise<void> => {
    const current = serverKey(readSettings(), await keys.get());
    if (current !== startedWith) restartForSettings();
  };

  context.subscriptions.push(
    log,
    keys,
    status,
    { dispose: () => store.dispose() },
    { dispose: () => permissions.dispose() },
    edits,
    editorContext,
    view,
    prompter,
    conversation,
    client,
    vscode.window.registerWebviewViewProvider(ConversationView.viewType, view),
    ...registerCommands({
      conversation,
      view,
      prompter,
      log,
      keys,
      restart: () => startBridge({ resume: true, notice: "The bridge restarted; the conversation goes on." }),
    }),
    conversation.onSessionState((state) => {
      view.setModel(state.model);
      view.setSessionReady(state.status === "ready");
    }),
    view.onMessage((msg) => {
      switch (msg.type) {
        case "submit":
          return conversation.submit(msg.text, msg.attachContext, msg.extra);
        case "cancel":
          return conversation.cancel();
        case "cancelToolCall":
          return conversation.cancelToolCall(msg.toolCallId);
        case "permission":
          return void permissions.answer(msg.id, msg.optionId, msg.feedback);
        case "openDiff":
          return void prompter.showDiff(msg.id);
        case "setMode":
          return void conversation.setMode(msg.modeId);
        case "newSession":
          return void conversation.newSession();
      }
    }),
    store.onAction((action) => {
      if (action.type === "phase" && action.phase === "idle" && restartWhenIdle) restartForSettings();
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (affectsServer(e)) void settingsChanged();
    }),
    // A key set, changed or removed (here or in another window) is a server setting too.
    keys.onDidChange(() => void settingsChanged()),
  );

  void startBridge({ resume: false }).then(() => offerKey(context, keys));
}

/** First run without any key: say what is needed, and offer the offline playground. Once per install. */
async function offerKey(context: vscode.ExtensionContext, keys: ApiKeyStore): Promise<void> {
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

export function deactivate(): void {
  // Everything is in context.subscriptions.
}
