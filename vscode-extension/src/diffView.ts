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
}

/**
 * Shows a proposed edit in VS Code's diff editor. Both sides are in-memory files (`agent-bridge-proposed:`
 * URIs): the current text is read-only, the proposed text is editable (and savable), and what it holds when
 * the edit is accepted is what the bridge writes. Nothing touches the real file until the bridge applies it.
 */
export class ProposedEdits implements vscode.FileSystemProvider, vscode.Disposable {
  private readonly files = new Map<string, Entry>();
  private readonly changed = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.changed.event;
  private readonly registration = vscode.workspace.registerFileSystemProvider(proposedScheme, this, { isCaseSensitive: true });
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
    await vscode.commands.executeCommand("vscode.diff", left, right, `${base} ↔ proposed edit (editable)`, { preview: false });
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

  /** Closes the diff tabs of a settled request and forgets its files (unsaved edits are saved first: no prompt). */
  async close(permissionId: string): Promise<void> {
    for (const doc of vscode.workspace.textDocuments) {
      if (doc.isDirty && this.permissionIdOf(doc.uri) === permissionId) await doc.save();
    }
    const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((tab) => {
      const input = tab.input;
      return input instanceof vscode.TabInputTextDiff && this.permissionIdOf(input.modified) === permissionId;
    });
    if (tabs.length) await vscode.window.tabGroups.close(tabs);
    for (const [key, entry] of [...this.files]) if (entry.permissionId === permissionId) this.files.delete(key);
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
    entry.data = content;
    entry.mtime = Date.now();
    this.changed.fire([{ type: vscode.FileChangeType.Changed, uri }]);
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
