/**
 * Rewind, fork and review in the editor (issue 23), over the bridge's checkpoint methods (`_bridge/rewind`,
 * `_bridge/fork`, `_bridge/changes`, `_bridge/keep`, `_bridge/undo`; the bridge's README documents them).
 *
 * - "Rewind" on a user message: the preview first (every file it restores and by which step, the conflicts —
 *   files someone else changed since, each with its own decision — and what no rewind undoes), then the rewind.
 *   A rewound conversation is loaded again from the bridge (the panel shows what the bridge now holds) and the
 *   prompt comes back into the input.
 * - "Changes" (a prompt's, or the whole session's pending ones): every file the agent changed, by any tool or
 *   command, with keep / undo per hunk, per file and for all of it. A file opens in VS Code's own diff editor
 *   (the review's baseline ↔ the file as it is now), where the editor title's Keep / Undo act on the hunk at the
 *   cursor (or the file). Nothing waits on review: the agent goes on, and this works at any time after the fact.
 * - "Fork": a new conversation tab from before that prompt; the original goes on untouched.
 */
import * as path from "node:path";
import * as vscode from "vscode";
import type { Conversation, Logger } from "./conversation";
import type { Conversations } from "./conversations";
import type { Disposable } from "./events";
import type { ChangesView, FromWebview, RewindDialog } from "./panel/messages";
import type { ConversationView } from "./panel/provider";
import type { ChangedFile, ReviewHunk, ReviewResult, RewindOutcome, RewindPreview } from "./protocol";
import { hunkAt } from "./hunks";
import { describeError } from "./session";

export const reviewScheme = "agent-bridge-review";

type Of<K extends FromWebview["type"]> = Extract<FromWebview, { type: K }>;

/** What an open review diff shows: the file of which view (a prompt's, or the session's). */
interface OpenDiff {
  conversation: Conversation;
  turnId?: string;
  file: ChangedFile;
  /** Which side of the diff this editor is: the cursor's line counts in the file now, or before the change. */
  side: "modified" | "original";
}

/** The review's "before" side of a diff: the baseline text, read-only, refreshed after a keep moves it. */
class BaselineDocs implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly registration = vscode.workspace.registerTextDocumentContentProvider(reviewScheme, this);

  set(uri: vscode.Uri, text: string): void {
    const before = this.texts.get(uri.toString());
    this.texts.set(uri.toString(), text);
    if (before !== undefined && before !== text) this.changed.fire(uri);
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? "";
  }

  dispose(): void {
    this.registration.dispose();
    this.changed.dispose();
  }
}

export class CheckpointActions implements vscode.Disposable {
  private readonly baselines = new BaselineDocs();
  /** The review diffs opened, by the modified side's URI (the workspace file). */
  private readonly diffs = new Map<string, OpenDiff>();
  /** The Changes view shown (its scope), to fetch again after each keep or undo. */
  private shown: { conversation: Conversation; turnId?: string; title: string } | undefined;
  /** The files the view last listed. */
  private lastFiles: ChangedFile[] = [];
  private readonly subscriptions: Disposable[];

  constructor(
    private readonly conversations: Conversations,
    private readonly view: ConversationView,
    private readonly cwd: () => string,
    private readonly log: Logger,
  ) {
    this.subscriptions = [
      this.baselines,
      vscode.window.onDidChangeActiveTextEditor(() => void this.setContext()),
      vscode.commands.registerCommand("agentBridge.keepHunk", () => this.atCursor("keep", true)),
      vscode.commands.registerCommand("agentBridge.undoHunk", () => this.atCursor("undo", true)),
      vscode.commands.registerCommand("agentBridge.keepFile", () => this.atCursor("keep", false)),
      vscode.commands.registerCommand("agentBridge.undoFile", () => this.atCursor("undo", false)),
      vscode.commands.registerCommand("agentBridge.showChanges", () => this.showChanges({ type: "showChanges" })),
    ];
  }

  // --- rewind ------------------------------------------------------------------------------------

  async preview(msg: Of<"rewindPreview">): Promise<void> {
    const dialog: RewindDialog = { turnId: msg.turnId, text: msg.text, mode: msg.mode };
    this.view.post({ type: "rewind", dialog });
    const session = this.conversations.active.agentSession;
    if (!session) return this.view.post({ type: "rewind", dialog: { ...dialog, error: "No session: the bridge is not running." } });
    try {
      const preview = (await session.rewind({ turnId: msg.turnId, mode: msg.mode })) as RewindPreview;
      this.view.post({ type: "rewind", dialog: { ...dialog, preview } });
    } catch (err) {
      this.view.post({ type: "rewind", dialog: { ...dialog, error: describeError(err) } });
    }
  }

  async confirm(msg: Of<"rewindConfirm">): Promise<void> {
    const conversation = this.conversations.active;
    const session = conversation.agentSession;
    if (!session) return;
    let outcome: RewindOutcome;
    try {
      outcome = (await session.rewind({ turnId: msg.turnId, mode: msg.mode, confirm: true, resolutions: msg.resolutions })) as RewindOutcome;
    } catch (err) {
      return this.view.post({ type: "rewind", dialog: { turnId: msg.turnId, text: msg.text, mode: msg.mode, error: `Not rewound: ${describeError(err)}` } });
    }
    this.view.post({ type: "rewind" });
    this.log.info(`Rewound (${msg.mode}) to before ${msg.turnId}: ${outcome.text.replaceAll("\n", " ")}`);
    if (outcome.conversation) {
      // The panel shows what the bridge now holds: the session loaded again, then the prompt to edit and resend.
      await conversation.open(session.sessionId);
      this.view.post({ type: "draft", text: msg.text });
    }
    conversation.notice(outcome.text);
  }

  // --- fork --------------------------------------------------------------------------------------

  async fork(msg: Of<"fork">): Promise<void> {
    const session = this.conversations.active.agentSession;
    if (!session) return;
    try {
      const forked = await session.fork(msg.turnId);
      await this.conversations.open({ sessionId: forked.sessionId, title: `Fork: ${msg.text.slice(0, 40)}` });
      this.view.post({ type: "draft", text: msg.text });
    } catch (err) {
      this.view.post({ type: "toast", text: `Could not fork: ${describeError(err)}` });
    }
  }

  // --- review ------------------------------------------------------------------------------------

  async showChanges(msg: Of<"showChanges">): Promise<void> {
    const conversation = this.conversations.active;
    const title = msg.title ?? "This session (not yet kept)";
    this.shown = { conversation, title, ...(msg.turnId ? { turnId: msg.turnId } : {}) };
    this.view.post({ type: "changes", view: { title, files: [], loaded: false, ...(msg.turnId ? { turnId: msg.turnId } : {}) } });
    await this.refresh();
  }

  /** Keep or undo from the panel: a hunk, a file, or everything shown. */
  async review(msg: Of<"review">): Promise<void> {
    const session = this.conversations.active.agentSession;
    if (!session) return;
    const { action, turnId, path: file, hunk, hunkId } = msg;
    try {
      const result = await session.review(action, { ...(turnId ? { turnId } : {}), ...(file ? { path: file } : {}), ...(hunk !== undefined ? { hunk } : {}), ...(hunkId ? { hunkId } : {}) });
      this.tell(action, result);
    } catch (err) {
      this.view.post({ type: "toast", text: describeError(err) });
    }
    await this.refresh();
  }

  /** A changed file in VS Code's diff editor: the review's baseline ↔ the file on disk (editable, live). */
  async openChange(msg: Of<"openChange">): Promise<void> {
    const file = this.current(msg.path);
    if (!file) return this.view.post({ type: "toast", text: `No change to ${msg.path} any more.` });
    const conversation = this.conversations.active;
    const onDisk = vscode.Uri.file(path.isAbsolute(file.path) ? file.path : path.join(this.cwd(), file.path));
    const scope = msg.turnId ?? "session";
    const before = vscode.Uri.from({ scheme: reviewScheme, path: `/${scope}/${file.path}` });
    this.baselines.set(before, file.oldText ?? "");
    const scoped = { conversation, file, ...(msg.turnId ? { turnId: msg.turnId } : {}) };
    this.diffs.set(onDisk.toString(), { ...scoped, side: "modified" });
    this.diffs.set(before.toString(), { ...scoped, side: "original" });
    const right = file.status === "deleted" ? vscode.Uri.from({ scheme: reviewScheme, path: `/${scope}/${file.path}`, query: "now" }) : onDisk;
    await vscode.commands.executeCommand("vscode.diff", before, right, `${path.basename(file.path)} (agent's changes: ${msg.turnId ? "this prompt" : "the session"})`, { preview: false });
    await this.setContext();
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
  }

  /** The file as the view last listed it. */
  private current(file: string): ChangedFile | undefined {
    return this.lastFiles.find((f) => f.path === file);
  }

  /** The Changes view fetched again (after a keep, an undo or a rewind), and the open diffs' baselines with it. */
  private async refresh(): Promise<void> {
    const shown = this.shown;
    if (!shown) return;
    const session = shown.conversation.agentSession;
    const base: ChangesView = { title: shown.title, files: [], loaded: true, ...(shown.turnId ? { turnId: shown.turnId } : {}) };
    if (!session) return this.view.post({ type: "changes", view: { ...base, error: "No session: the bridge is not running." } });
    try {
      const result = await session.changes(shown.turnId);
      this.lastFiles = result.files;
      this.view.post({ type: "changes", view: { ...base, files: result.files } });
      for (const open of this.diffs.values()) {
        const now = open.turnId === shown.turnId ? result.files.find((f) => f.path === open.file.path) : undefined;
        if (!now) continue;
        open.file = now;
        this.baselines.set(vscode.Uri.from({ scheme: reviewScheme, path: `/${open.turnId ?? "session"}/${now.path}` }), now.oldText ?? "");
      }
    } catch (err) {
      this.view.post({ type: "changes", view: { ...base, error: describeError(err) } });
    }
  }

  /** The diff editor's Keep / Undo: the hunk at the cursor (or the whole file) of the review diff in front. */
  private async atCursor(action: "keep" | "undo", hunkOnly: boolean): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    const open = editor && this.diffs.get(editor.document.uri.toString());
    if (!editor || !open) return void vscode.window.showInformationMessage("Open a file from the agent's Changes first.");
    const session = open.conversation.agentSession;
    if (!session) return;
    let hunk: ReviewHunk | undefined;
    if (hunkOnly) {
      hunk = hunkAt(open.file.hunks, editor.selection.active.line, open.side);
      if (!hunk) return void vscode.window.showInformationMessage("The cursor is on no change of the agent's: put it in a changed block.");
    }
    try {
      const result = await session.review(action, {
        path: open.file.path,
        ...(open.turnId ? { turnId: open.turnId } : {}),
        ...(hunk ? { hunk: hunk.index, hunkId: hunk.id } : {}),
      });
      this.tell(action, result);
    } catch (err) {
      void vscode.window.showWarningMessage(describeError(err));
    }
    await this.refresh();
  }

  private tell(action: "keep" | "undo", result: ReviewResult): void {
    const done = result.done.length;
    const parts = [`${action === "keep" ? "Kept" : "Undid"} ${done} change${done === 1 ? "" : "s"}.`];
    for (const c of result.conflicts) parts.push(`${c.path}${c.hunk !== null ? ` (hunk ${c.hunk + 1})` : ""}: ${c.why}`);
    this.view.post({ type: "toast", text: parts.join(" ") });
  }

  private async setContext(): Promise<void> {
    const uri = vscode.window.activeTextEditor?.document.uri.toString();
    await vscode.commands.executeCommand("setContext", "agentBridge.reviewing", uri !== undefined && this.diffs.has(uri));
  }
}
