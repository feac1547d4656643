import * as vscode from "vscode";
import type { Presence } from "./attention";
import type { ProposedEdits } from "./diffView";
import type { Disposable } from "./events";
import { orderedOptions, type PendingPermission, type PermissionRequests } from "./permissionRequests";
import type { PermissionOption } from "./protocol";
import { optionDetail, questionText } from "./questionText";

/**
 * The VS Code side of permission requests: an edit's proposed change opens in the diff editor (accept/reject
 * in its title bar; its right side is editable and the edited text is what gets written); when nobody sees the
 * question's card (the panel hidden, VS Code in the background, another tab shown), a notification asks, with
 * the whole question. The panel's card is driven by the panel state; whichever answers first wins.
 */
export class PermissionPrompter implements vscode.Disposable {
  private readonly subscriptions: Disposable[];

  constructor(
    private readonly requests: PermissionRequests,
    private readonly edits: ProposedEdits,
    private readonly presence: Presence,
  ) {
    requests.editedText = (id) => edits.editedText(id);
    this.subscriptions = [
      requests.onAdded((p) => void this.present(p)),
      requests.onSettled((s) => {
        void this.edits.close(s.id);
        this.updateContext();
      }),
      vscode.window.onDidChangeActiveTextEditor(() => this.updateContext()),
    ];
  }

  /** Opens the proposed change of a pending request (the card's "Show diff"). */
  async showDiff(id: string): Promise<void> {
    const diff = this.requests.get(id)?.diffs[0];
    if (diff) await this.edits.open(id, diff);
    this.updateContext();
  }

  /**
   * The diff editor's ✓ and ✗: answers the request whose diff is in the active editor. Rejecting asks what to
   * do instead (optional; Escape keeps the request open).
   */
  async answerActiveDiff(accept: boolean): Promise<boolean> {
    const id = this.edits.permissionIdOf(vscode.window.activeTextEditor?.document.uri) ?? this.requests.all().find((r) => r.diffs.length)?.id;
    if (!id) return false;
    if (accept) {
      // The keyboard leaves the proposal's editable side first, for its read-only one: keys typed on right after ✓
      // can no longer change it, so it is saved as it stands and its tab closes without VS Code asking "Do you want
      // to save the changes…?" (issue 24 item 2; a key between the last save and the close used to get that).
      // The command resolves once the focus moved, after the edits typed before it reached this host.
      if (this.edits.permissionIdOf(vscode.window.activeTextEditor?.document.uri) === id) {
        await Promise.resolve(vscode.commands.executeCommand("workbench.action.compareEditor.focusSecondarySide")).catch(() => undefined);
      }
      return this.requests.answerWithKind(id, ["allow_once", "allow_always"]);
    }
    const feedback = await vscode.window.showInputBox({
      title: "Reject the proposed edit",
      prompt: "What should the agent do instead? (optional — Enter rejects, Escape keeps the edit pending)",
      placeHolder: "e.g. keep the old name, only fix the typo",
    });
    if (feedback === undefined) return false;
    return this.requests.answerWithKind(id, ["reject_once", "reject_always"], feedback.trim() || undefined);
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
  }

  private async present(p: PendingPermission): Promise<void> {
    if (p.diffs.length) await this.showDiff(p.id);
    if (!this.presence.seen(p.params.sessionId)) await this.notify(p);
  }

  /**
   * A notification with three short buttons (long ones are cut to "All…"): Allow once, Reject, and "More…",
   * which lists every option in full in a quick pick (Allow once first and preselected).
   */
  private async notify(p: PendingPermission): Promise<void> {
    const options = orderedOptions(p.params.options);
    const once = options.find((o) => o.kind === "allow_once");
    const reject = options.find((o) => o.kind === "reject_once");
    const buttons = [once && "Allow once", reject && "Reject", "More…"].filter((b): b is string => !!b);
    const choice = await vscode.window.showWarningMessage(questionText(p.params), ...buttons);
    // A request already answered in the panel (or withdrawn by the bridge) ignores a late click.
    if (!this.requests.get(p.id)) return;
    if (choice === "Allow once" && once) this.requests.answer(p.id, once.optionId);
    else if (choice === "Reject" && reject) this.requests.answer(p.id, reject.optionId);
    else if (choice === "More…") await this.pick(p, options);
  }

  private async pick(p: PendingPermission, options: PermissionOption[]): Promise<void> {
    const items: (vscode.QuickPickItem & { option?: PermissionOption })[] = options.map((o) => ({
      label: o.name,
      description: optionDetail(o),
      option: o,
    }));
    items.push({ label: "Show in the panel" });
    const picked = await vscode.window.showQuickPick(items, { title: questionText(p.params), placeHolder: "Choose an answer", ignoreFocusOut: true });
    if (!picked) return;
    if (!picked.option) return void this.presence.reveal();
    this.requests.answer(p.id, picked.option.optionId);
  }

  private updateContext(): void {
    const pending = this.requests.all().some((r) => r.diffs.length > 0);
    void vscode.commands.executeCommand("setContext", "agentBridge.editPending", pending);
  }
}
