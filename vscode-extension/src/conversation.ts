import { AgentClient } from "./agentClient";
import type { AgentConnection } from "./connection";
import { type Disposable, Emitter } from "./events";
import { describePrompt } from "./panel/attachments";
import { type ConnectionStatus, permissionCard } from "./panel/state";
import type { PanelStore } from "./panel/store";
import type { PermissionRequests } from "./permissionRequests";
import type { Pickers } from "./pickers";
import type { ContentBlock, McpServer, ResourceContent, SessionInfo, SessionModels, SessionModes } from "./protocol";
import { type AgentSession, errorMessage, type TurnPhase } from "./session";

const duplicateCancelMs = 120;

/**
 * The session as the host sees it, for the panel (Send waits for `ready`; the header shows `model`) and the
 * welcome screen (`needsKey`). Before `ready` a prompt is queued here and sent once the session exists.
 */
export interface SessionState {
  status: "starting" | "installing" | "ready" | "restarting" | "failed";
  /** Why it is not ready, in a few words ("setting up the bridge (first start)…", "the bridge is restarting…"). */
  detail?: string;
  /** The model the session runs (its id); `agentBridge.selectModel` changes it. */
  model?: string;
  queued: number;
  /** No API key is set (nor an offline scenario): the welcome offers "Set API key" and "Try it offline". */
  needsKey: boolean;
}

/** Where the conversation's lines go (the extension's log channel; a list in the tests). */
export interface Logger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** What the status-bar item shows of the conversation. */
export interface StatusSink {
  setConnection(status: ConnectionStatus, detail?: string): void;
  setPhase(phase: TurnPhase): void;
  setModel(model: string | undefined): void;
}

/**
 * What the conversation needs from the editor, read when needed (settings change): the folder sessions run in,
 * the MCP servers and model new sessions get, and the editor's selection (or file) for a prompt's context.
 */
export interface ConversationHost {
  cwd(): string;
  mcpServers(): McpServer[];
  /** The model new sessions start with ("" or undefined: the bridge's default). */
  defaultModel(): string | undefined;
  selection(): ResourceContent | undefined;
  log: Logger;
  status: StatusSink;
  pickers: Pickers;
}

interface Queued {
  text: string;
  attachContext: boolean;
  extra: ContentBlock[];
}

/**
 * The conversation: one bridge session at a time, its events reduced into the panel store. Submitting while a
 * turn runs sends the new prompt at once (the bridge interrupts the running turn to take it). A prompt sent
 * before the session exists is queued and sent when it does. When the bridge restarts (a crash, the Restart
 * command, a settings change) the session is loaded again (`session/load`) and the panel keeps what it shows.
 */
export class Conversation implements Disposable {
  private client: AgentClient | undefined;
  private session: AgentSession | undefined;
  /** The session to load again when the bridge comes back. */
  private resumeId: string | undefined;
  private sessionSubscriptions: Disposable[] = [];
  private readonly subscriptions: Disposable[];
  private lastCancelAt = 0;
  /** The bridge's modes and models, as the last new session listed them (`session/load` answers none). */
  private lastModes: SessionModes | undefined;
  private lastModels: SessionModels | undefined;
  private readonly queue: Queued[] = [];
  private panelSession: SessionState = { status: "starting", queued: 0, needsKey: false };
  private readonly sessionChanged = new Emitter<SessionState>();
  /** Every change of the session state (the view forwards it to the panel). */
  readonly onSessionState = this.sessionChanged.event;

  private readonly log: Logger;
  private readonly status: StatusSink;

  constructor(
    private readonly store: PanelStore,
    private readonly permissions: PermissionRequests,
    private readonly host: ConversationHost,
  ) {
    this.log = host.log;
    this.status = host.status;
    this.subscriptions = [
      permissions.onAdded((p) => store.dispatch({ type: "permissionRequested", permission: permissionCard(p.id, p.params) })),
      permissions.onSettled((s) => store.dispatch({ type: "permissionSettled", id: s.id, how: s.how, optionName: s.option?.name })),
    ];
  }

  get busy(): boolean {
    return (this.session?.phase ?? "idle") !== "idle";
  }

  /**
   * The bridge is up. `resume`: load the session the panel shows (the panel keeps its items; `notice` says
   * why the bridge restarted); otherwise, or when that fails, open a fresh session.
   */
  async attach(connection: AgentConnection, opts: { resume: boolean; notice?: string } = { resume: false }): Promise<void> {
    this.detach();
    const client = new AgentClient(connection, this.permissions);
    this.client = client;
    const id = opts.resume ? this.resumeId : undefined;
    if (id && (await this.reload(client, id))) {
      if (opts.notice) this.notice(opts.notice);
      this.sessionReady();
      return;
    }
    if (client === this.client) await this.newSession();
  }

  /** The bridge went away: pending requests are answered `cancelled`, the turn state is reset. */
  detach(status?: { status: "failed" | "stopped" | "starting"; message?: string }): void {
    this.closeSession();
    this.client?.dispose();
    this.client = undefined;
    this.permissions.cancelAll();
    if (status) this.setConnection(status.status, status.message);
  }

  /** The bridge died under us: the running turn is marked interrupted, the panel keeps the rest. */
  crashed(reason: string, restartInMs: number | undefined): void {
    const next = restartInMs !== undefined ? "it is being restarted and the conversation goes on" : "it is not restarted (run “Agent Bridge: Restart”)";
    this.session?.abandon(`the bridge ${reason}; ${next}.`);
    this.detach();
    if (restartInMs !== undefined) {
      this.notice(`The bridge ${reason}. It is restarting; the conversation goes on where it was.`);
      this.setConnection("starting", `restarting: the bridge ${reason}`);
      this.setSession({ status: "restarting", detail: "the bridge is restarting…" });
    } else {
      this.notice(`The bridge ${reason}, again and again; it is not restarted. Run “Agent Bridge: Restart” to try again.`);
      this.setConnection("failed", `the bridge ${reason}`);
      this.setSession({ status: "failed", detail: `the bridge ${reason}` });
    }
  }

  /** Before the bridge runs: "installing" (the first start makes its environment) or "starting". */
  starting(status: "starting" | "installing", detail?: string): void {
    this.setConnection("starting");
    this.setSession({ status, detail });
  }

  failed(message: string): void {
    this.setConnection("failed", message);
    this.setSession({ status: "failed", detail: message });
  }

  setNeedsKey(needsKey: boolean): void {
    this.setSession({ needsKey });
  }

  async newSession(): Promise<void> {
    const client = this.client;
    if (!client) return this.notice("The bridge is not running. Run “Agent Bridge: Show Log” to see why.");
    this.closeSession();
    const cwd = this.host.cwd();
    this.setSession({ status: "starting", detail: "opening a session…" });
    try {
      const session = await client.newSession(cwd, this.host.mcpServers());
      if (client !== this.client) return;
      this.adopt(session, { fresh: true });
      this.log.info(`Session ${session.sessionId} in ${cwd}`);
      const wanted = this.host.defaultModel();
      if (wanted && session.models?.currentModelId !== wanted) await this.applyModel(session, wanted);
      this.sessionReady();
    } catch (err) {
      this.notice(`Could not start a session: ${errorMessage(err)}`);
      this.setSession({ status: "failed", detail: `no session: ${errorMessage(err)}` });
    }
  }

  /** Offers the workspace's stored sessions (newest first); the chosen one is replayed into the panel and continues. */
  async resumeSession(): Promise<void> {
    const client = this.client;
    if (!client) return this.notice("The bridge is not running. Run “Agent Bridge: Show Log” to see why.");
    const cwd = this.host.cwd();
    let stored: SessionInfo[];
    try {
      stored = await client.listSessions(cwd);
    } catch (err) {
      return this.notice(`Could not list the stored sessions: ${errorMessage(err)}`);
    }
    const picked = await this.host.pickers.pickStoredSession(stored, cwd, this.session?.sessionId);
    if (!picked || client !== this.client) return;
    const modes = this.session?.modes ?? this.lastModes;
    this.closeSession();
    try {
      const shown = modes && { ...modes, currentModeId: "default" };
      const session = await client.loadSession(picked, cwd, shown, (s) => this.adopt(s, { fresh: true }), this.host.mcpServers(), { models: this.lastModels });
      session.continueAfter(this.store.state.currentTurn);
      this.log.info(`Resumed session ${picked} in ${cwd}`);
      this.sessionReady();
    } catch (err) {
      this.closeSession();
      this.notice(`Could not resume session ${picked}: ${errorMessage(err)}`);
      await this.newSession();
    }
  }

  /** Sends a prompt; `attachContext` adds the active selection (or file) as a resource block. */
  submit(text: string, attachContext: boolean, extra: ContentBlock[] = []): void {
    const session = this.session;
    if (!session || this.panelSession.status !== "ready") {
      this.queue.push({ text, attachContext, extra });
      this.setSession({});
      const when = this.panelSession.status === "failed" ? "once the bridge runs again (Agent Bridge: Restart)" : "as soon as the session is ready";
      return this.notice(`Your message is kept and will be sent ${when}.`);
    }
    const blocks: ContentBlock[] = [{ type: "text", text }, ...extra];
    const resource = attachContext ? this.host.selection() : undefined;
    if (resource) blocks.push(resource);
    void session.prompt(blocks).then((ended) => {
      if ("error" in ended) this.log.error(`Turn ${ended.turnId} failed: ${ended.error}`);
      else if ("interrupted" in ended) this.log.warn(`Turn ${ended.turnId} interrupted: ${ended.interrupted}`);
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

  /** The panel's Stop on a sub-agent's card: that call alone stops (and everything it runs). */
  cancelToolCall(toolCallId: string): void {
    this.session?.cancelToolCall(toolCallId);
    this.log.info(`Cancel tool call ${toolCallId}`);
  }

  /** Picks a permission mode; bypassPermissions needs a confirmation (a modal), else the panel's picker is put back. */
  async setMode(modeId?: string): Promise<void> {
    const session = this.session;
    if (!session) return this.notice("No session yet: the bridge is not running.");
    const chosen = modeId ?? (await this.host.pickers.pickMode(session.modes));
    if (!chosen) return;
    const current = session.modes?.currentModeId ?? "default";
    if (chosen === "bypassPermissions" && current !== chosen) {
      if (!(await this.host.pickers.confirmBypass())) {
        this.store.dispatch({ type: "update", update: { sessionUpdate: "current_mode_update", currentModeId: current } });
        return;
      }
    }
    try {
      await session.setMode(chosen);
    } catch (err) {
      this.notice(`Could not set the mode: ${errorMessage(err)}`);
      this.store.dispatch({ type: "update", update: { sessionUpdate: "current_mode_update", currentModeId: current } });
    }
  }

  /** The model picker: the session's models (from session/new), or any model id typed in. */
  async selectModel(): Promise<void> {
    const session = this.session;
    if (!session) return this.notice("No session yet: the bridge is not running.");
    const id = await this.host.pickers.pickModel(session.models);
    if (!id || session !== this.session) return;
    await this.applyModel(session, id);
  }

  dispose(): void {
    this.detach();
    for (const s of this.subscriptions) s.dispose();
    this.sessionChanged.dispose();
  }

  private async applyModel(session: AgentSession, modelId: string): Promise<void> {
    try {
      await session.setModel(modelId);
      this.lastModels = session.models;
      this.log.info(`Model: ${modelId}`);
    } catch (err) {
      this.notice(`Could not switch to the model ${modelId}: ${errorMessage(err)}`);
    }
    this.setSession({});
  }

  /**
   * Loads `id` into a restarted bridge without replaying it (the panel shows it already), then puts back the
   * mode and model it had. False when it cannot be loaded (the caller opens a new session).
   */
  private async reload(client: AgentClient, id: string): Promise<boolean> {
    const mode = this.store.state.modes?.currentModeId;
    const model = this.lastModels?.currentModelId;
    let replaying = true;
    this.setSession({ status: "starting", detail: "reloading the session…" });
    try {
      const session = await client.loadSession(id, this.host.cwd(), this.store.state.modes ?? this.lastModes, (s) => this.adopt(s, { fresh: false, muted: () => replaying }), this.host.mcpServers(), {
        models: this.lastModels,
        firstTurnId: this.store.state.currentTurn,
      });
      replaying = false;
      if (mode) await session.setMode(mode).catch((err: unknown) => this.log.warn(`Restoring the mode ${mode}: ${errorMessage(err)}`));
      if (model) await session.setModel(model).catch((err: unknown) => this.log.warn(`Restoring the model ${model}: ${errorMessage(err)}`));
      this.log.info(`Reloaded session ${id}`);
      return true;
    } catch (err) {
      this.closeSession();
      this.notice(`Could not reload the session (${errorMessage(err)}); a new session starts and the panel is cleared.`);
      return false;
    }
  }

  /**
   * Makes `session` the panel's session: its events go to the store. `fresh`: the panel starts from empty
   * (a new or resumed session); else it keeps its items (a reload). `muted`: updates to drop (the replay).
   */
  private adopt(session: AgentSession, opts: { fresh: boolean; muted?: () => boolean }): void {
    this.session = session;
    this.resumeId = session.sessionId;
    if (session.modes) this.lastModes = session.modes;
    if (session.models) this.lastModels = session.models;
    this.sessionSubscriptions = [
      session.onUpdate((update) => {
        if (!opts.muted?.()) this.store.dispatch({ type: "update", update });
      }),
      session.onTurnStarted((t) => this.store.dispatch({ type: "turnStarted", turnId: t.turnId, ...describePrompt(t.prompt) })),
      session.onTurnEnded((t) => this.store.dispatch({ type: "turnEnded", ...t })),
      session.onPhase((phase) => {
        this.store.dispatch({ type: "phase", phase });
        this.status.setPhase(phase);
      }),
    ];
    if (opts.fresh) this.store.dispatch({ type: "sessionStarted", sessionId: session.sessionId, modes: session.modes });
  }

  /** The session exists: the panel may send, and what was queued goes out. */
  private sessionReady(): void {
    this.setConnection("ready");
    this.setSession({ status: "ready", detail: undefined });
    for (const q of this.queue.splice(0)) this.submit(q.text, q.attachContext, q.extra);
    this.setSession({});
  }

  /** Leaves the current session; a turn still running in it is cancelled, not left to run unseen. */
  private closeSession(): void {
    if (this.session && this.session.phase !== "idle") this.session.cancel();
    for (const s of this.sessionSubscriptions) s.dispose();
    this.sessionSubscriptions = [];
    if (this.session && this.client) this.client.closeSession(this.session);
    this.session = undefined;
    this.status.setPhase("idle");
    if (this.panelSession.status === "ready") this.setSession({ status: "starting", detail: undefined });
  }

  private setConnection(status: ConnectionStatus, message?: string): void {
    this.store.dispatch({ type: "connection", status, message });
    this.status.setConnection(status, message);
  }

  get sessionState(): SessionState {
    return this.panelSession;
  }

  private setSession(change: Partial<SessionState>): void {
    const model = this.session?.models?.currentModelId ?? this.lastModels?.currentModelId;
    this.panelSession = { ...this.panelSession, ...change, queued: this.queue.length, model };
    this.sessionChanged.fire(this.panelSession);
    this.status.setModel(model);
  }

  private notice(text: string): void {
    this.store.dispatch({ type: "notice", text });
  }
}
