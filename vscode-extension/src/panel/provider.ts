import { randomBytes } from "node:crypto";
import * as vscode from "vscode";
import type { EditorContext } from "../editorContext";
import type { Disposable } from "../events";
import { panelHtml } from "./html";
import type { FromWebview, ToWebview } from "./messages";
import type { PanelStore } from "./store";

/**
 * The conversation webview view. Strict CSP (nonce'd script, no remote content), resources through
 * `asWebviewUri`. A (re)loaded webview says `ready` and gets the whole state; then each action as it happens.
 */
export class ConversationView implements vscode.WebviewViewProvider, vscode.Disposable {
  static readonly viewType = "agentBridge.conversation";
  private view: vscode.WebviewView | undefined;
  private ready = false;
  private readonly received = new vscode.EventEmitter<FromWebview>();
  readonly onMessage = this.received.event;
  private readonly subscriptions: Disposable[] = [this.received];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly store: PanelStore,
    private readonly editorContext: EditorContext,
  ) {
    const fromStore = store.onAction((action) => this.post({ type: "action", action }));
    this.subscriptions.push(
      { dispose: () => fromStore.dispose() },
      editorContext.onDidChange((label) => this.post({ type: "context", label })),
    );
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
      view.webview.onDidReceiveMessage((msg: FromWebview) => {
        if (msg.type === "ready") {
          this.ready = true;
          this.post({ type: "reset", state: this.store.state });
          this.post({ type: "context", label: this.editorContext.label() });
          return;
        }
        this.received.fire(msg);
      }),
      // Without retainContextWhenHidden a hidden webview is torn down; it says `ready` again when shown.
      view.onDidChangeVisibility(() => {
        if (!view.visible) this.ready = false;
      }),
      view.onDidDispose(() => {
        if (this.view === view) this.view = undefined;
        this.ready = false;
      }),
    );
  }

  async reveal(): Promise<void> {
    await vscode.commands.executeCommand(`${ConversationView.viewType}.focus`);
  }

  focusInput(): void {
    this.post({ type: "focusInput" });
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
  }

  private post(message: ToWebview): void {
    if (this.view && this.ready) void this.view.webview.postMessage(message);
  }

  private html(webview: vscode.Webview): string {
    const script = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, "out", "webview.js"));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, "media", "panel.css"));
    return panelHtml({ cspSource: webview.cspSource, nonce: makeNonce(), scriptUri: script.toString(), styleUri: style.toString() });
  }
}

function makeNonce(): string {
  return randomBytes(18).toString("base64url");
}
