import * as vscode from "vscode";
import type { ProposedEdits } from "./diffView";
import type { Disposable } from "./events";
import type { PendingPermission, PermissionRequests } from "./permissionRequests";
import type { PermissionOption } from "./protocol";

/** What the permission UI needs from the panel. */
export interface PanelPresence {
  readonly visible: boolean;
}

/**
 * The VS Code side of permission requests: an edit's proposed change opens in the diff editor (with
 * accept/reject in its title bar); when the panel is hidden, a notification offers the same options.
 * The panel's card is driven by the panel state; whichever answers first wins.
 */
export class PermissionPrompter implements vscode.Disposable {
  private readonly subscriptions: Disposable[];

  constructor(
    private readonly requests: PermissionRequests,
    private readonly edits: ProposedEdits,
    private readonly panel: PanelPresence,
  ) {
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

  /** The diff editor's accept/reject: answers the request whose diff is in the active editor. */
  answerActiveDiff(accept: boolean): boolean {
    const id = this.edits.permissionIdOf(vscode.window.activeTextEditor?.document.uri) ?? this.requests.all().find((r) => r.diffs.length)?.id;
    if (!id) return false;
    return this.requests.answerWithKind(id, accept ? ["allow_once", "allow_always"] : ["reject_once", "reject_always"]);
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
  }

  private async present(p: PendingPermission): Promise<void> {
    if (p.diffs.length) await this.showDiff(p.id);
    if (!this.panel.visible) await this.notify(p);
  }

  private async notify(p: PendingPermission): Promise<void> {
    const options = p.params.options;
    const choice = await vscode.window.showInformationMessage(
      `Agent Bridge wants to run: ${p.params.toolCall.title}`,
      ...options.map((o) => o.name),
    );
    const option: PermissionOption | undefined = options.find((o) => o.name === choice);
    // A request already answered in the panel (or withdrawn by the bridge) ignores a late click.
    if (option) this.requests.answer(p.id, option.optionId);
  }

  private updateContext(): void {
    const pending = this.requests.all().some((r) => r.diffs.length > 0);
    void vscode.commands.executeCommand("setContext", "agentBridge.editPending", pending);
  }
}
