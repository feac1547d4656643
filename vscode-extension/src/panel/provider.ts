import { randomBytes } from "node:crypto";
import * as vscode from "vscode";
import type { Disposable } from "../events";
import { panelHtml } from "./html";
import type { FromWebview, ToWebview } from "./messages";
import type { PanelAction } from "./state";
import type { PanelStore } from "./store";

/**
 * The conversation webview view: its document (strict CSP, a nonce'd script, resources through `asWebviewUri`)
 * and its two directions — `post` to the webview, `onMessage` for every message from it (routed in one table,
 * src/router.ts). Without retainContextWhenHidden a hidden webview is torn down; a (re)loaded webview says
 * `ready` and `replay` gives it the whole state (the store's, and what the host told it since).
 */
export class ConversationView implements vscode.WebviewViewProvider, vscode.Disposable {
  static readonly viewType = "agentBridge.conversation";
  private view: vscode.WebviewView | undefined;
  private ready = false;
  private readonly received = new vscode.EventEmitter<FromWebview>();
  readonly onMessage = this.received.event;
  private readonly visibility = new vscode.EventEmitter<boolean>();
  /** The view was shown or hidden. */
  readonly onDidChangeVisibility = this.visibility.event;
  private readonly subscriptions: Disposable[] = [this.received, this.visibility];
  /** What the host told the webview besides the store's actions: sent again when it reloads. */
  private readonly sticky = new Map<ToWebview["type"], ToWebview>();
  private fromStore: Disposable;
  /** A stream's actions wait here for a moment and go as one message (each message is work on the workbench's
   * thread, which the panel's typing shares in a browser); anything else goes at once, after them. */
  private pending: PanelAction[] = [];
  private flushTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private store: PanelStore,
  ) {
    this.fromStore = store.onAction((action) => this.queue(action));
    this.subscriptions.push({ dispose: () => this.fromStore.dispose() });
  }

  /** Shows another conversation's state (a tab switch): the webview starts over from it. */
  showStore(store: PanelStore): void {
    if (store === this.store) return;
    this.fromStore.dispose();
    this.pending = [];
    this.store = store;
    this.fromStore = store.onAction((action) => this.queue(action));
    this.post({ type: "reset", state: store.state });
  }

  get visible(): boolean {
    return this.view?.visible ?? false;
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    const roots = [vscode.Uri.joinPath(this.extensionUri, "out"), vscode.Uri.joinPath(this.extensionUri, "media")];
    view.webview.options = { enableScripts: true, localResourceRoots: roots };
    view.webview.html = this.html(view.webview);
    this.subscriptions.push(
      view.webview.onDidReceiveMessage((msg: FromWebview) => this.received.fire(msg)),
      view.onDidChangeVisibility(() => {
        if (!view.visible) this.ready = false;
        this.visibility.fire(view.visible);
      }),
      view.onDidDispose(() => {
        if (this.view === view) this.view = undefined;
        this.ready = false;
        this.visibility.fire(false);
      }),
    );
  }

  /** The webview (re)loaded and said `ready`: the whole state, then what the host said since that still holds. */
  replay(): void {
    this.pending = [];
    this.ready = true;
    const workspace = this.sticky.get("workspace");
    if (workspace) this.post(workspace);
    this.post({ type: "reset", state: this.store.state });
    for (const [type, message] of this.sticky) if (type !== "workspace") this.post(message);
  }

  /**
   * To the webview, if it is loaded. A message of a kind that describes the host's current view of something
   * (context, model, session state, workspace folders) is kept and sent again after a reload.
   */
  post(message: ToWebview): void {
    this.flush();
    this.send(message);
  }

  private send(message: ToWebview): void {
    if (stickyTypes.has(message.type)) this.sticky.set(message.type, message);
    if (this.view && this.ready) void this.view.webview.postMessage(message);
  }

  /** A streamed update waits up to `batchMs` for the ones after it; any other action goes at once. */
  private queue(action: PanelAction): void {
    this.pending.push(action);
    if (action.type !== "update") return this.flush();
    this.flushTimer ??= setTimeout(() => this.flush(), batchMs);
  }

  private flush(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const actions = this.pending;
    this.pending = [];
    if (actions.length === 1 && actions[0]) this.send({ type: "action", action: actions[0] });
    else if (actions.length) this.send({ type: "actions", actions });
  }

  async reveal(): Promise<void> {
    await vscode.commands.executeCommand(`${ConversationView.viewType}.focus`);
  }

  focusInput(): void {
    this.post({ type: "focusInput" });
  }

  dispose(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    for (const s of this.subscriptions) s.dispose();
  }

  private html(webview: vscode.Webview): string {
    const script = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, "out", "webview.js"));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, "media", "panel.css"));
    return panelHtml({ cspSource: webview.cspSource, nonce: makeNonce(), scriptUri: script.toString(), styleUri: style.toString() });
  }
}

/** How long a streamed update waits for the next ones (the bridge sends one per ~16 ms while it streams). */
const batchMs = 40;

/** Messages that say how something stands now: the last of each kind is sent again to a reloaded webview. */
const stickyTypes: ReadonlySet<ToWebview["type"]> = new Set(["context", "model", "sessionState", "workspace", "tabs", "trust"]);

function makeNonce(): string {
  return randomBytes(18).toString("base64url");
}
