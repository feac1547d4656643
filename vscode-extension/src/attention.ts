import * as vscode from "vscode";
import type { Attention, Conversations } from "./conversations";
import type { Disposable } from "./events";
import type { StatusBar } from "./status";

/** Whether a person sees a conversation now: the panel is shown, VS Code has the focus, and its tab is the one shown. */
export interface Presence {
  seen(sessionId: string | undefined): boolean;
  reveal(): Promise<void>;
}

/**
 * "Tell me when you need me": a turn that ends while nobody looks (the panel hidden, VS Code in the background,
 * or another tab shown) is said in a notification and in the status bar; "Show" opens its tab. A question that
 * waits is notified by the permission prompter (with the answer buttons); the status bar says it waits too.
 * A turn the person stopped themselves (cancelled) is not news.
 */
export class AttentionNotifier implements vscode.Disposable {
  private readonly subscriptions: Disposable[];

  constructor(
    private readonly conversations: Conversations,
    private readonly presence: Presence,
    private readonly status: StatusBar,
  ) {
    this.subscriptions = [
      conversations.onAttention((a) => this.notice(a)),
      conversations.onTabs((tabs) => status.setWaiting(tabs.filter((t) => t.waiting).length)),
      vscode.window.onDidChangeWindowState((s) => {
        if (s.focused && this.presence.seen(this.conversations.active.sessionId)) this.status.setAttention(undefined);
      }),
    ];
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
  }

  private notice(a: Attention): void {
    if (a.kind !== "turnEnded") return;
    const tab = a.conversation;
    if (this.presence.seen(tab.sessionId)) return;
    const ended = a.ended;
    if ("stopReason" in ended && ended.stopReason === "cancelled") return;
    const what = "error" in ended ? `failed: ${ended.error}` : "interrupted" in ended ? `was interrupted: ${ended.interrupted}` : ended.stopReason === "end_turn" ? "is done" : `ended (${ended.stopReason})`;
    const title = tab.title ? `“${tab.title}”` : "the turn";
    const text = `Agent Bridge: ${title} ${what}`;
    this.status.setAttention(`$(bell) ${"error" in ended ? "Agent: turn failed" : "Agent: done"}`);
    const show = "Show";
    const shown = "error" in ended ? vscode.window.showWarningMessage(text, show) : vscode.window.showInformationMessage(text, show);
    void shown.then(async (choice) => {
      if (choice !== show) return;
      this.conversations.switchTo(tab.id);
      await this.presence.reveal();
      this.status.setAttention(undefined);
    });
  }
}
