import { randomBytes } from "node:crypto";
import * as os from "node:os";
import * as path from "node:path";
import * as vscode from "vscode";
import type { EditorContext } from "../editorContext";
import type { Disposable } from "../events";
import type { ContentBlock } from "../protocol";
import { rankFiles } from "./fileSearch";
import { panelHtml } from "./html";
import type { FileChoice, FromWebview, ToWebview } from "./messages";
import type { PanelStore } from "./store";

/** What the host's `onMessage` gets: the webview's messages that are not answered here. */
export type PanelRequest = Exclude<FromWebview, { type: "ready" | "openFile" | "findFiles" | "checkPaths" | "copy" | "command" }>;

/** Mentioned files up to this size go in the prompt whole (an embedded resource); larger ones as a link. */
const embedLimit = 100_000;
const maxListedFiles = 20_000;
const maxChoices = 30;

/**
 * The conversation webview view. Strict CSP (nonce'd script, no remote content), resources through
 * `asWebviewUri`. A (re)loaded webview says `ready` and gets the whole state; then each action as it happens.
 * File links, @-mention completion, copy buttons and command buttons are answered here; the rest goes to
 * `onMessage` (a submit with its mentions and problems already turned into content blocks, `extra`).
 */
export class ConversationView implements vscode.WebviewViewProvider, vscode.Disposable {
  static readonly viewType = "agentBridge.conversation";
  private view: vscode.WebviewView | undefined;
  private ready = false;
  private readonly received = new vscode.EventEmitter<PanelRequest>();
  readonly onMessage = this.received.event;
  private readonly subscriptions: Disposable[] = [this.received];
  private model: string | undefined;
  private sessionReady: boolean | undefined;
  private files: Promise<Map<string, vscode.Uri>> | undefined;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly store: PanelStore,
    private readonly editorContext: EditorContext,
  ) {
    const fromStore = store.onAction((action) => this.post({ type: "action", action }));
    const watcher = vscode.workspace.createFileSystemWatcher("**/*", false, true, false);
    const forget = (): void => {
      this.files = undefined;
    };
    this.subscriptions.push(
      { dispose: () => fromStore.dispose() },
      editorContext.onDidChange(() => this.postContext()),
      watcher,
      watcher.onDidCreate(forget),
      watcher.onDidDelete(forget),
      vscode.workspace.onDidChangeWorkspaceFolders(() => {
        forget();
        this.post({ type: "workspace", folders: folders() });
      }),
    );
  }

  get visible(): boolean {
    return this.view?.visible ?? false;
  }

  /** The model the session runs, for the panel's header (undefined hides it). */
  setModel(model: string | undefined): void {
    this.model = model;
    this.post({ type: "model", model });
  }

  /** Whether a session exists: the panel's Send waits for it. */
  setSessionReady(ready: boolean): void {
    this.sessionReady = ready;
    this.post({ type: "sessionState", ready });
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    const roots = [vscode.Uri.joinPath(this.extensionUri, "out"), vscode.Uri.joinPath(this.extensionUri, "media")];
    view.webview.options = { enableScripts: true, localResourceRoots: roots };
    view.webview.html = this.html(view.webview);
    this.subscriptions.push(
      view.webview.onDidReceiveMessage((msg: FromWebview) => this.handle(msg)),
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

  private handle(msg: FromWebview): void {
    switch (msg.type) {
      case "ready":
        this.ready = true;
        this.post({ type: "workspace", folders: folders() });
        this.post({ type: "reset", state: this.store.state });
        this.postContext();
        this.post({ type: "model", model: this.model });
        if (this.sessionReady !== undefined) this.post({ type: "sessionState", ready: this.sessionReady });
        return;
      case "openFile":
        return void this.openFile(msg.path, msg.line);
      case "findFiles":
        return void this.findFiles(msg.requestId, msg.query);
      case "checkPaths":
        return void this.checkPaths(msg.paths);
      case "copy":
        return void vscode.env.clipboard.writeText(msg.text);
      case "command":
        // Only the extension's own commands: the welcome's buttons, the model name.
        if (/^agentBridge\.\w+$/.test(msg.command)) void vscode.commands.executeCommand(msg.command);
        return;
      case "submit":
        return void this.submit(msg);
      default:
        this.received.fire(msg);
    }
  }

  private postContext(): void {
    this.post({ type: "context", label: this.editorContext.label(), problems: this.editorContext.problemCount() });
  }

  private async submit(msg: Extract<FromWebview, { type: "submit" }>): Promise<void> {
    const extra: ContentBlock[] = [];
    for (const mention of msg.mentions ?? []) {
      const block = await this.mentionBlock(mention).catch(() => undefined);
      if (block) extra.push(block);
    }
    if (msg.attachProblems) {
      const problems = this.editorContext.problems();
      if (problems) extra.push(problems);
    }
    this.received.fire({ type: "submit", text: msg.text, attachContext: msg.attachContext, extra });
  }

  /** An @-mentioned file: its text embedded when it is small (unsaved changes included), else a link. */
  private async mentionBlock(mention: string): Promise<ContentBlock | undefined> {
    const uri = (await this.fileMap()).get(mention) ?? (await this.resolve(mention));
    if (!uri) return undefined;
    const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
    const name = mention;
    if (open && open.getText().length <= embedLimit) {
      return { type: "resource", resource: { uri: uri.toString(), text: open.getText(), mimeType: mimeOf(open.languageId) } };
    }
    const stat = await vscode.workspace.fs.stat(uri);
    if (stat.size <= embedLimit) {
      const bytes = await vscode.workspace.fs.readFile(uri);
      if (!bytes.subarray(0, 8000).includes(0)) {
        return { type: "resource", resource: { uri: uri.toString(), text: new TextDecoder().decode(bytes), mimeType: "text/plain" } };
      }
    }
    return { type: "resource_link", uri: uri.toString(), name };
  }

  private async openFile(file: string, line: number | undefined): Promise<void> {
    const uri = await this.resolve(file);
    if (!uri) {
      this.post({ type: "fileNotFound", path: file });
      return;
    }
    const at = line && line > 0 ? new vscode.Position(line - 1, 0) : undefined;
    await vscode.window.showTextDocument(uri, { preview: true, ...(at ? { selection: new vscode.Range(at, at) } : {}) });
  }

  private async checkPaths(paths: string[]): Promise<void> {
    const status: Record<string, "exists" | "missing"> = {};
    for (const p of paths.slice(0, 200)) status[p] = (await this.resolve(p)) ? "exists" : "missing";
    this.post({ type: "paths", status });
  }

  /** A path from the model or a link: absolute, `~/…`, relative to a workspace folder, or the one file whose path ends so. */
  private async resolve(given: string): Promise<vscode.Uri | undefined> {
    let raw = given.replace(/^file:\/\//i, "");
    if (raw.startsWith("~/")) raw = path.join(os.homedir(), raw.slice(2));
    if (path.isAbsolute(raw)) return (await isFile(vscode.Uri.file(raw))) ? vscode.Uri.file(raw) : undefined;
    const rel = raw.replace(/^\.\//, "");
    for (const folder of vscode.workspace.workspaceFolders ?? []) {
      const uri = vscode.Uri.joinPath(folder.uri, rel);
      if (await isFile(uri)) return uri;
    }
    if (rel.startsWith("../")) return undefined;
    const map = await this.fileMap();
    const exact = map.get(rel);
    if (exact) return exact;
    const matches = [...map.entries()].filter(([p]) => p.endsWith(`/${rel}`));
    return matches.length === 1 ? matches[0]?.[1] : undefined;
  }

  private async findFiles(requestId: number, query: string): Promise<void> {
    const map = await this.fileMap();
    this.post({ type: "files", requestId, files: rankFiles([...map.keys()], query, maxChoices).map((p): FileChoice => ({ path: p })) });
  }

  /** The workspace's files (bounded, the usual excludes), relative path → URI; re-listed after a create or delete. */
  private fileMap(): Promise<Map<string, vscode.Uri>> {
    this.files ??= (async () => {
      const uris = await vscode.workspace.findFiles("**/*", excludeGlob(), maxListedFiles);
      const multi = (vscode.workspace.workspaceFolders?.length ?? 0) > 1;
      return new Map(uris.map((u) => [vscode.workspace.asRelativePath(u, multi), u] as const));
    })();
    return this.files;
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

function folders(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
}

/** `files.exclude` and `search.exclude` (the globs set to true) and the usual build and dependency folders. */
function excludeGlob(): string {
  const globs = new Set(["**/node_modules/**", "**/.git/**", "**/.venv/**", "**/__pycache__/**"]);
  for (const section of ["files.exclude", "search.exclude"]) {
    const value = vscode.workspace.getConfiguration().get<Record<string, unknown>>(section) ?? {};
    for (const [glob, on] of Object.entries(value)) if (on === true) globs.add(glob);
  }
  return `{${[...globs].join(",")}}`;
}

async function isFile(uri: vscode.Uri): Promise<boolean> {
  try {
    return ((await vscode.workspace.fs.stat(uri)).type & vscode.FileType.File) !== 0;
  } catch {
    return false;
  }
}

function mimeOf(languageId: string): string {
  return languageId === "plaintext" ? "text/plain" : `text/x-${languageId}`;
}

function makeNonce(): string {
  return randomBytes(18).toString("base64url");
}
