import * as os from "node:os";
import * as vscode from "vscode";
import { AgentClient } from "./agentClient";
import type { AgentConnection } from "./connection";
import type { EditorContext } from "./editorContext";
import { describePrompt } from "./panel/attachments";
import { permissionCard } from "./panel/state";
import type { Disposable } from "./events";
import type { PanelStore } from "./panel/store";
import type { PermissionRequests } from "./permissionRequests";
import type { ContentBlock, SessionInfo, SessionModes } from "./protocol";
import { readMcpServers } from "./settings";
import { type AgentSession, errorMessage } from "./session";
import type { StatusBar } from "./status";

const duplicateCancelMs = 120;

/**
 * The conversation: one bridge session at a time, its events reduced into the panel store. Submitting while a
 * turn runs sends the new prompt at once (the bridge interrupts the running turn to take it).
 */
export class Conversation implements vscode.Disposable {
  private client: AgentClient | undefined;
  private session: AgentSession | undefined;
  private sessionSubscriptions: Disposable[] = [];
  private readonly subscriptions: Disposable[];
  private lastCancelAt = 0;
  /** The bridge's modes, as the last new session listed them (`session/load` answers none). */
  private lastModes: SessionModes | undefined;

  constructor(
    private readonly store: PanelStore,
    private readonly permissions: PermissionRequests,
    private readonly editorContext: EditorContext,
    private readonly status: StatusBar,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.subscriptions = [
      permissions.onAdded((p) => store.dispatch({ type: "permissionRequested", permission: permissionCard(p.id, p.params) })),
      permissions.onSettled((s) => store.dispatch({ type: "permissionSettled", id: s.id, how: s.how, optionName: s.option?.name })),
    ];
  }

  /** The bridge is up (first start or a restart): open a fresh session on it. */
  async attach(connection: AgentConnection): Promise<void> {
    this.detach();
    this.client = new AgentClient(connection, this.permissions);
    this.store.dispatch({ type: "connection", status: "ready" });
    this.status.setConnection("ready");
    await this.newSession();
  }

  /** The bridge went away: pending requests are answered `cancelled`, the turn state is reset. */
  detach(status?: { status: "failed" | "stopped"; message?: string }): void {
    this.closeSession();
    this.client?.dispose();
    this.client = undefined;
    this.permissions.cancelAll();
    if (status) {
      this.store.dispatch({ type: "connection", ...status });
      this.status.setConnection(status.status, status.message);
    }
  }

  async newSession(): Promise<void> {
    const client = this.client;
    if (!client) return this.notice("The bridge is not running. Run “Agent Bridge: Show Log” to see why.");
    this.closeSession();
    const cwd = workspaceCwd();
    try {
      this.adopt(await client.newSession(cwd, readMcpServers()));
      this.log.info(`Session ${this.session?.sessionId ?? "?"} in ${cwd}`);
    } catch (err) {
      this.notice(`Could not start a session: ${errorMessage(err)}`);
    }
  }

  /** Offers the workspace's stored sessions (newest first); the chosen one is replayed into the panel and continues. */
  async resumeSession(): Promise<void> {
    const client = this.client;
    if (!client) return this.notice("The bridge is not running. Run “Agent Bridge: Show Log” to see why.");
    const cwd = workspaceCwd();
    let stored: SessionInfo[];
    try {
      stored = await client.listSessions(cwd);
    } catch (err) {
      return this.notice(`Could not list the stored sessions: ${errorMessage(err)}`);
    }
    const current = this.session?.sessionId;
    const items = stored
      .filter((s) => s.sessionId !== current)
      .map((s) => ({ label: s.title?.trim() || "(no prompt yet)", description: describeTime(s.updatedAt), detail: s.sessionId, sessionId: s.sessionId }));
    if (!items.length) {
      void vscode.window.showInformationMessage(`Agent Bridge: no earlier sessions in ${cwd}.`);
      return;
    }
    const pick = await vscode.window.showQuickPick(items, { title: "Agent Bridge: resume a session", placeHolder: "Sessions of this folder, newest first", matchOnDetail: true });
    if (!pick || client !== this.client) return;
    const modes = this.session?.modes ?? this.lastModes;
    this.closeSession();
    try {
      const shown = modes && { ...modes, currentModeId: "default" };
      await client.loadSession(pick.sessionId, cwd, shown, (session) => this.adopt(session), readMcpServers());
      this.log.info(`Resumed session ${pick.sessionId} in ${cwd}`);
    } catch (err) {
      this.closeSession();
      this.notice(`Could not resume session ${pick.sessionId}: ${errorMessage(err)}`);
      await this.newSession();
    }
  }

  /** Makes `session` the panel's session: its events go to the store, and the panel starts from empty. */
  private adopt(session: AgentSession): void {
    this.session = session;
    if (session.modes) this.lastModes = session.modes;
    this.sessionSubscriptions = [
      session.onUpdate((update) => this.store.dispatch({ type: "update", update })),
      session.onTurnStarted((t) => this.store.dispatch({ type: "turnStarted", turnId: t.turnId, ...describePrompt(t.prompt) })),
      session.onTurnEnded((t) => this.store.dispatch({ type: "turnEnded", ...t })),
      session.onPhase((phase) => {
        this.store.dispatch({ type: "phase", phase });
        this.status.setPhase(phase);
      }),
    ];
    this.store.dispatch({ type: "sessionStarted", sessionId: session.sessionId, modes: session.modes });
  }

  /** Sends a prompt; `attachContext` adds the active selection (or file) as a resource block. */
  submit(text: string, attachContext: boolean, extra: ContentBlock[] = []): void {
    const session = this.session;
    if (!session) return this.notice("No session yet: the bridge is not running.");
    const blocks: ContentBlock[] = [{ type: "text", text }, ...extra];
    const resource = attachContext ? this.editorContext.resource() : undefined;
    if (resource) blocks.push(resource);
    void session.prompt(blocks).then((ended) => {
      if ("error" in ended) this.log.error(`Turn ${ended.turnId} failed: ${ended.error}`);
      else this.log.info(`Turn ${ended.turnId} ended: ${ended.stopReason}`);
    });
  }

  /** Escape in the panel can reach us twice (the webview and the keybinding); one key press is one cancel. */
  cancel(): void {
    const now = Date.now();
    if (now - this.lastCancelAt < duplicateCancelMs) return;
    this.lastCancelAt = now;
    const kind = this.session?.cancel() ?? "idle";
    if (kind !== "idle") this.log.info(kind === "force" ? "Cancel (forced)" : "Cancel");
  }

  async setMode(modeId?: string): Promise<void> {
    const session = this.session;
    if (!session) return this.notice("No session yet: the bridge is not running.");
    let chosen = modeId;
    if (!chosen) {
      const modes = session.modes?.availableModes ?? [];
      const pick = await vscode.window.showQuickPick(
        modes.map((m) => ({ label: m.name, description: m.id === session.modes?.currentModeId ? "current" : m.id, detail: m.description ?? undefined, id: m.id })),
        { title: "Agent Bridge: permission mode" },
      );
      chosen = pick?.id;
    }
    if (!chosen) return;
    try {
      await session.setMode(chosen);
    } catch (err) {
      this.notice(`Could not set the mode: ${errorMessage(err)}`);
    }
  }

  dispose(): void {
    this.detach();
    for (const s of this.subscriptions) s.dispose();
  }

  /** Leaves the current session; a turn still running in it is cancelled, not left to run unseen. */
  private closeSession(): void {
    if (this.session && this.session.phase !== "idle") this.session.cancel();
    for (const s of this.sessionSubscriptions) s.dispose();
    this.sessionSubscriptions = [];
    if (this.session && this.client) this.client.closeSession(this.session);
    this.session = undefined;
    this.status.setPhase("idle");
  }

  private notice(text: string): void {
    this.store.dispatch({ type: "notice", text });
  }
}

function workspaceCwd(): string {
  return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? os.homedir();
}

function describeTime(iso: string | null | undefined): string {
  const time = iso ? Date.parse(iso) : Number.NaN;
  return Number.isNaN(time) ? "" : new Date(time).toLocaleString();
}
