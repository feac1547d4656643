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
  /** The requests answered (their diff must not open, or must close, whenever their `open` gets there). */
  private readonly answered = new Set<string>();
  private readonly changed = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.changed.event;
  private readonly registration = vscode.workspace.registerFileSystemProvider(proposedScheme, this, { isCaseSensitive: true });
  private readonly forget = vscode.workspace.onDidCloseTextDocument((doc) => {
    const entry = this.files.get(doc.uri.toString());
    if (entry?.settled) this.files.delete(doc.uri.toString());
  });
  private readonly encoder = new TextEncoder();
  private readonly decoder = new TextDecoder();

  constructor() {
    void this.closeLeftovers();
  }

  /**
   * Opens the diff for a permission request; the request id rides in the URI query. Both documents are
   * loaded before the diff editor opens, so it never shows empty panes while their text is fetched.
   */
  async open(permissionId: string, diff: DiffContent): Promise<void> {
    const base = path.basename(diff.path);
    const left = this.uriFor(permissionId, diff.path, "current");
    const right = this.uriFor(permissionId, diff.path, "proposed");
    const now = Date.now();
    if (this.answered.has(permissionId)) return;
    if (!this.files.has(right.toString())) {
      this.files.set(left.toString(), { permissionId, side: "current", data: this.encoder.encode(diff.oldText ?? ""), mtime: now });
      this.files.set(right.toString(), { permissionId, side: "proposed", data: this.encoder.encode(diff.newText), mtime: now, proposed: diff.newText });
    }
    await Promise.all([vscode.workspace.openTextDocument(left), vscode.workspace.openTextDocument(right)]);
    // Answered while its documents loaded (a digit pressed in the panel at once): no diff opens for it any more.
    if (this.answered.has(permissionId)) return;
    // The panel keeps the focus (its question card takes the keyboard); a click goes into the diff to change it.
    // Not the whole file (a huge file's changed region, or a file outside the workspace not read yet): an edit of it
    // can't be written as the file, and the bridge refuses one, so the title says so up front.
    const title = diff._meta?.partial ? `${base} ↔ proposed edit (part of the file: edits can't be applied)` : `${base} ↔ proposed edit (editable)`;
    await vscode.commands.executeCommand("vscode.diff", left, right, title, { preview: false, preserveFocus: true });
    // Answered while the diff editor opened: its close ran before this tab existed, so it closes now.
    if (this.answered.has(permissionId)) await this.close(permissionId);
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
    this.answered.add(permissionId);
    for (const entry of this.files.values()) if (entry.permissionId === permissionId) entry.settled = true;
    const ours = (uri: unknown): boolean => uri instanceof vscode.Uri && this.permissionIdOf(uri) === permissionId;
    const tabsOf = (): vscode.Tab[] =>
      vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((tab) => {
        const input = tab.input;
        if (input instanceof vscode.TabInputTextDiff) return ours(input.modified) || ours(input.original);
        return input instanceof vscode.TabInputText && ours(input.uri);
      });
    // Keys typed into the proposal after the answer make it dirty again, and VS Code asks "Do you want to save the
    // changes you made to <file>?" for a dirty tab it closes (issue 24 item 2: a Cancel there left the tab). The
    // answer's text is already taken, so changes are saved (into memory) right before the close, again while keys
    // keep coming. The diff's ✓ moves the keyboard to the read-only side before it answers (permissions.ts), so
    // no key lands between the last save and the close.
    for (let attempt = 0; attempt < 5; attempt++) {
      await Promise.all(vscode.workspace.textDocuments.filter((doc) => doc.isDirty && ours(doc.uri)).map((doc) => doc.save()));
      const tabs = tabsOf();
      if (!tabs.length) break;
      if (attempt < 4 && tabs.some((tab) => tab.isDirty)) continue;
      await vscode.window.tabGroups.close(tabs, true);
    }
    // A document VS Code no longer holds is forgotten now; one it still holds, when it lets go of it.
    const open = new Set(vscode.workspace.textDocuments.map((d) => d.uri.toString()));
    for (const [key, entry] of [...this.files]) if (entry.permissionId === permissionId && !open.has(key)) this.files.delete(key);
  }

  /**
   * Tabs of proposals from before this extension host (it restarted, or the window came back with them): no
   * request of theirs is pending any more, and nothing here remembers their text. They close (a changed one is
   * saved first, into memory: no prompt), instead of staying as diffs nobody can answer or save.
   */
  private async closeLeftovers(): Promise<void> {
    const ours = (uri: unknown): boolean => uri instanceof vscode.Uri && uri.scheme === proposedScheme;
    const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((tab) => {
      const input = tab.input;
      if (input instanceof vscode.TabInputTextDiff) return ours(input.modified) || ours(input.original);
      return input instanceof vscode.TabInputText && ours(input.uri);
    });
    if (!tabs.length) return;
    for (const doc of vscode.workspace.textDocuments) if (doc.isDirty && ours(doc.uri)) await doc.save();
    await vscode.window.tabGroups.close(tabs);
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
    const side = new URLSearchParams(uri.query).get("side");
    const entry = this.files.get(uri.toString());
    if (side !== "proposed" || entry?.side === "current") throw vscode.FileSystemError.NoPermissions(uri);
    if (!entry) {
      // A proposal VS Code still holds after this provider forgot it (a save that came after its request was
      // answered and its documents let go, or a dirty editor restored into a new extension host): the save is
      // kept here, where it changes nothing. Refusing it would leave an editor with unsaved changes that can never
      // be saved (VS Code's "Failed to save … NoPermissions", issue 24 item 2).
      this.files.set(uri.toString(), { permissionId: this.permissionIdOf(uri) ?? "", side: "proposed", data: content, mtime: Date.now(), settled: true });
      return;
    }
    // The editor saved it: no change event (it knows), which would only make it read the file back.
    entry.data = content;
    entry.mtime = Date.now();
  }

  readDirectory(): [string, vscode.FileType][] {
    return [];
  }

  /** Folders are implied by the files' paths: VS Code asks for one before it saves a file it cannot stat (the
   * forgotten proposal above), and refusing would fail that save. */
  createDirectory(): void {
    // Nothing to make.
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
