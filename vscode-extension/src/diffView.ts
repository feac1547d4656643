import * as path from "node:path";
import * as vscode from "vscode";
import type { DiffContent } from "./protocol";

export const proposedScheme = "agent-bridge-proposed";

interface Entry {
  permissionId: string;
  side: "current" | "proposed";
  data: Uint8Array;
  mtime: number;
  /** What the agent proposed (the proposed side), to tell a user's change from none. */
  proposed?: string;
  /** The request was answered: the entry stays while an editor may still hold its document (a late save
   * must not fail), and goes when VS Code closes that document. */
  settled?: boolean;
}

/**
 * Shows a proposed edit in VS Code's diff editor. Both sides are in-memory files (`agent-bridge-proposed:`
 * URIs): the current text is read-only, the proposed text is editable (and savable), and what it holds when
 * the edit is accepted is what the bridge writes. Nothing touches the real file until the bridge applies it.
 * Once the request is answered every tab showing either side closes (a diff tab, or one side opened on its own),
 * and the in-memory files stay until VS Code lets go of their documents: a save that comes late (auto-save, a
 * second editor) still succeeds instead of leaving an unsaveable "file ●" tab behind.
 */
export class ProposedEdits implements vscode.FileSystemProvider, vscode.Disposable {
  private readonly files = new Map<string, Entry>();
  private readonly changed = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.changed.event;
  private readonly registration = vscode.workspace.registerFileSystemProvider(proposedScheme, this, { isCaseSensitive: true });
  private readonly forget = vscode.workspace.onDidCloseTextDocument((doc) => {
    const entry = this.files.get(doc.uri.toString());
    if (entry?.settled) this.files.delete(doc.uri.toString());
  });
  private readonly encoder = new TextEncoder();
  private readonly decoder = new TextDecoder();

  /**
   * Opens the diff for a permission request; the request id rides in the URI query. Both documents are
   * loaded before the diff editor opens, so it never shows empty panes while their text is fetched.
   */
  async open(permissionId: string, diff: DiffContent): Promise<void> {
    const base = path.basename(diff.path);
    const left = this.uriFor(permissionId, diff.path, "current");
    const right = this.uriFor(permissionId, diff.path, "proposed");
    const now = Date.now();
    if (!this.files.has(right.toString())) {
      this.files.set(left.toString(), { permissionId, side: "current", data: this.encoder.encode(diff.oldText ?? ""), mtime: now });
      this.files.set(right.toString(), { permissionId, side: "proposed", data: this.encoder.encode(diff.newText), mtime: now, proposed: diff.newText });
    }
    await Promise.all([vscode.workspace.openTextDocument(left), vscode.workspace.openTextDocument(right)]);
    // The panel keeps the focus (its question card takes the keyboard); a click goes into the diff to change it.
    await vscode.commands.executeCommand("vscode.diff", left, right, `${base} ↔ proposed edit (editable)`, { preview: false, preserveFocus: true });
  }

  /** The proposed side's text when the user changed it (saved or not); undefined when it is as proposed. */
  editedText(permissionId: string): string | undefined {
    for (const [key, entry] of this.files) {
      if (entry.permissionId !== permissionId || entry.side !== "proposed") continue;
      const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === key);
      const text = open ? open.getText() : this.decoder.decode(entry.data);
      return text === entry.proposed ? undefined : text;
    }
    return undefined;
  }

  /** The permission request a diff editor's document belongs to, if any. */
  permissionIdOf(uri: vscode.Uri | undefined): string | undefined {
    if (uri?.scheme !== proposedScheme) return undefined;
    return new URLSearchParams(uri.query).get("permission") ?? undefined;
  }

  /** Closes every tab of a settled request (unsaved edits are saved first: no prompt); its files go once VS Code
   * closes their documents. */
  async close(permissionId: string): Promise<void> {
    for (const entry of this.files.values()) if (entry.permissionId === permissionId) entry.settled = true;
    for (const doc of vscode.workspace.textDocuments) {
      if (doc.isDirty && this.permissionIdOf(doc.uri) === permissionId) await doc.save();
    }
    const ours = (uri: unknown): boolean => uri instanceof vscode.Uri && this.permissionIdOf(uri) === permissionId;
    const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((tab) => {
      const input = tab.input;
      if (input instanceof vscode.TabInputTextDiff) return ours(input.modified) || ours(input.original);
      return input instanceof vscode.TabInputText && ours(input.uri);
    });
    if (tabs.length) await vscode.window.tabGroups.close(tabs);
    // A document VS Code no longer holds is forgotten now; one it still holds, when it lets go of it.
    const open = new Set(vscode.workspace.textDocuments.map((d) => d.uri.toString()));
    for (const [key, entry] of [...this.files]) if (entry.permissionId === permissionId && !open.has(key)) this.files.delete(key);
  }

  // --- FileSystemProvider ------------------------------------------------------------------------

  watch(): vscode.Disposable {
    return new vscode.Disposable(() => undefined);
  }

  stat(uri: vscode.Uri): vscode.FileStat {
    const entry = this.entry(uri);
    const stat: vscode.FileStat = { type: vscode.FileType.File, ctime: entry.mtime, mtime: entry.mtime, size: entry.data.byteLength };
    if (entry.side === "current") stat.permissions = vscode.FilePermission.Readonly;
    return stat;
  }

  readFile(uri: vscode.Uri): Uint8Array {
    return this.entry(uri).data;
  }

  writeFile(uri: vscode.Uri, content: Uint8Array): void {
    const entry = this.entry(uri);
    if (entry.side !== "proposed") throw vscode.FileSystemError.NoPermissions(uri);
    // The editor saved it: no change event (it knows), which would only make it read the file back.
    entry.data = content;
    entry.mtime = Date.now();
  }

  readDirectory(): [string, vscode.FileType][] {
    return [];
  }

  createDirectory(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  delete(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  rename(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  dispose(): void {
    this.forget.dispose();
    this.registration.dispose();
    this.changed.dispose();
    this.files.clear();
  }

  private entry(uri: vscode.Uri): Entry {
    const entry = this.files.get(uri.toString());
    if (!entry) throw vscode.FileSystemError.FileNotFound(uri);
    return entry;
  }

  private uriFor(permissionId: string, filePath: string, side: string): vscode.Uri {
    return vscode.Uri.from({ scheme: proposedScheme, path: filePath, query: `permission=${permissionId}&side=${side}` });
  }
}
