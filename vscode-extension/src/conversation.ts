import type { AgentClient } from "./agentClient";
import { type Disposable, Emitter } from "./events";
import { describePrompt } from "./panel/attachments";
import type { ConnectionStatus } from "./panel/state";
import { PanelStore } from "./panel/store";
import type { Pickers } from "./pickers";
import { carriesModel, type ContentBlock, type McpServer, type ResourceContent, type SessionModels, type SessionModes } from "./protocol";
import { type AgentSession, describeError, isConnectionLost, type TurnEnded, type TurnPhase } from "./session";

const duplicateCancelMs = 120;

/**
 * The session as the host sees it, for the panel (Send waits for `ready`; the header shows `model`) and the
 * welcome screen (`needsKey`). Before `ready` a prompt is queued here and sent once the session exists.
 */
export interface SessionState {
  status: "starting" | "installing" | "ready" | "restarting" | "failed";
  /** Why it is not ready, in a few words ("setting up the bridge (first start)…", "the bridge is restarting…"). */
  detail?: string;
  /** The model the session runs: its name as the bridge lists it (else its id), and its id. */
  model?: string;
  modelId?: string;
  queued: number;
  /** No API key is set (nor an offline scenario): the panel offers "Set API key" and "Try it offline". */
  needsKey: boolean;
}

/** Where the conversation's lines go (the extension's log channel; a list in the tests). */
export interface Logger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/**
 * What the conversation needs from the editor, read when needed (settings change): the folder sessions run in,
 * the MCP servers and model new sessions get, the editor's selection (or file) for a prompt's context, and a
 * memory of the model each session ran (a resumed session goes on with its own model).
 */
export interface ConversationHost {
  cwd(): string;
  mcpServers(): McpServer[];
  /** The model new sessions start with ("" or undefined: the bridge's default). */
  defaultModel(): string | undefined;
  selection(): ResourceContent | undefined;
  rememberModel(sessionId: string, modelId: string): void;
  rememberedModel(sessionId: string): string | undefined;
  log: Logger;
  pickers: Pickers;
}

interface Queued {
  text: string;
  attachContext: boolean;
  extra: ContentBlock[];
}

/** The key of the notice that says how the bridge stands (each new word replaces the last while nothing came between). */
const bridgeNotice = "bridge";

/**
 * One conversation (a tab of the panel): one bridge session at a time, its events reduced into its own store.
 * Submitting while a turn runs sends the new prompt at once (the bridge interrupts the running turn to take
 * it). A prompt sent before the session exists is queued and sent when it does. When the bridge restarts (a
 * crash, the Restart command, a settings change) the session is loaded again (`session/load`) and the panel
 * keeps what it shows. Needs no `vscode`: the editor is behind `ConversationHost`.
 */
export class Conversation implements Disposable {
  readonly store = new PanelStore();
  private client: AgentClient | undefined;
  private session: AgentSession | undefined;
  /** The session to load again when the bridge comes back. */
  private resumeId: string | undefined;
  private sessionSubscriptions: Disposable[] = [];
  private lastCancelAt = 0;
  /** The bridge's modes and models, as the last new session listed them. */
  private lastModes: SessionModes | undefined;
  private lastModels: SessionModels | undefined;
  private readonly queue: Queued[] = [];
  private panelSession: SessionState = { status: "starting", queued: 0, needsKey: false };
  private readonly sessionChanged = new Emitter<SessionState>();
  /** Every change of the session state (the view forwards the active tab's to the panel). */
  readonly onSessionState = this.sessionChanged.event;
  private readonly turnEnded = new Emitter<TurnEnded>();
  /** A turn of this conversation ended (the host tells a person who is not looking). */
  readonly onTurnEnded = this.turnEnded.event;
  private readonly phases = new Emitter<TurnPhase>();
  readonly onPhase = this.phases.event;
  private readonly log: Logger;
  /** The first prompt's words (the tab's title); a resumed session's stored title until then. */
  title: string | undefined;
  /** How the bridge ended the last time it stopped under this conversation (said again when it is back). */
  private lastCrash: string | undefined;

  constructor(
    readonly id: string,
    private readonly host: ConversationHost,
  ) {
    this.log = host.log;
  }

  get busy(): boolean {
    return this.phase !== "idle";
  }

  get phase(): TurnPhase {
    return this.session?.phase ?? "idle";
  }

  get sessionId(): string | undefined {
    return this.session?.sessionId;
  }

  /** The bridge session shown (for its checkpoint methods: rewind, fork, review); none before it exists. */
  get agentSession(): AgentSession | undefined {
    return this.session;
  }

  get sessionState(): SessionState {
    return this.panelSession;
  }

  /** Whether this conversation's session is `sessionId` (a permission question goes to its tab). */
  owns(sessionId: string): boolean {
    return this.session?.sessionId === sessionId || (!this.session && this.resumeId === sessionId);
  }

  /**
   * The bridge is up. `resume`: load the session the panel shows (the panel keeps its items; `notice` says
   * why the bridge restarted); `sessionId`: load that stored session into this (empty) tab, replaying it;
   * otherwise, or when a reload fails, open a fresh session.
   */
  async attach(client: AgentClient, opts: { resume: boolean; notice?: string; noticeIfBlank?: boolean; sessionId?: string } = { resume: false }): Promise<void> {
    this.detach();
    this.client = client;
    if (opts.sessionId) return this.open(opts.sessionId);
    const id = opts.resume ? this.resumeId : undefined;
    if (id) {
      const reloaded = await this.reload(client, id);
      if (client !== this.client) return;
      if (reloaded) {
        const crash = this.lastCrash;
        this.lastCrash = undefined;
        const notice = crash ? `The bridge ${crash}. It is back; the conversation goes on.` : opts.notice;
        // A conversation with nothing in it has nothing to go on with: it keeps its welcome (unless told).
        const blank = this.store.state.items.length === 0;
        if (notice && (crash || !blank || opts.noticeIfBlank !== false)) this.notice(notice, bridgeNotice);
        this.sessionReady();
        return;
      }
      if (reloaded === undefined) return; // the bridge went away meanwhile: its crash says so
    }
    await this.newSession({ keep: id !== undefined });
  }

  /** The bridge went away: the turn state is reset (its permission questions were answered `cancelled`). */
  detach(): void {
    this.closeSession();
    this.client = undefined;
  }

  /** The bridge died under us: the running turn is marked interrupted, the panel keeps the rest. */
  crashed(reason: string, restart: { inMs: number; attempt: number; of: number } | undefined): void {
    const next = restart ? "it is being restarted and the conversation goes on" : "it is not restarted (run “Agent Bridge: Restart”)";
    this.session?.abandon(`the bridge ${reason}; ${next}.`);
    this.detach();
    this.lastCrash = reason;
    if (restart) {
      const which = restart.attempt > 1 ? ` (restart ${restart.attempt} of ${restart.of} in a row)` : "";
      this.notice(`The bridge ${reason}. It is restarting${which}; the conversation goes on where it was.`, bridgeNotice);
      this.setConnection("starting", `restarting: the bridge ${reason}`);
      this.setSession({ status: "restarting", detail: "the bridge is restarting…" });
    } else {
      this.notice(`The bridge ${reason}; it stopped too often in a row and is not restarted again. Run “Agent Bridge: Restart” to try again.`, bridgeNotice);
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

  /** A fresh session in this tab; `keep`: the panel keeps what it shows (a session that could not be reloaded). */
  async newSession(opts: { keep?: boolean } = {}): Promise<void> {
    const client = this.client;
    if (!client) return this.notice("The bridge is not running yet; the session starts when it does (“Agent Bridge: Show Log” says why it is not).");
    this.closeSession();
    const cwd = this.host.cwd();
    this.setSession({ status: "starting", detail: "opening a session…" });
    try {
      const session = await client.newSession(cwd, this.host.mcpServers());
      if (client !== this.client) return;
      this.adopt(session, { fresh: !opts.keep });
      this.log.info(`Session ${session.sessionId} in ${cwd}`);
      const wanted = this.host.defaultModel();
      if (wanted && session.models?.currentModelId !== wanted && carriesModel(wanted, session.models)) await this.applyModel(session, wanted);
      else if (session.models?.currentModelId) this.host.rememberModel(session.sessionId, session.models.currentModelId);
      this.sessionReady();
    } catch (err) {
      if (isConnectionLost(err)) return; // the crash says so
      this.notice(`Could not start a session: ${describeError(err)}`);
      this.setSession({ status: "failed", detail: `no session: ${describeError(err)}` });
    }
  }

  /** Loads a stored session into this tab: its history replays, then it goes on (on the model it ran). */
  async open(sessionId: string): Promise<void> {
    const client = this.client;
    if (!client) return this.notice("The bridge is not running; run “Agent Bridge: Restart”.");
    const modes = this.session?.modes ?? this.lastModes;
    this.closeSession();
    const cwd = this.host.cwd();
    this.setSession({ status: "starting", detail: "loading the session…" });
    try {
      const shown = modes && { ...modes, currentModeId: "default" };
      const session = await client.loadSession(sessionId, cwd, shown, (s) => this.adopt(s, { fresh: true }), this.host.mcpServers(), { models: this.lastModels });
      if (client !== this.client) return;
      session.continueAfter(this.store.state.currentTurn);
      await this.restoreModel(session);
      this.log.info(`Resumed session ${sessionId} in ${cwd}`);
      this.sessionReady();
    } catch (err) {
      if (isConnectionLost(err)) return;
      this.closeSession();
      this.notice(`Could not resume session ${sessionId}: ${describeError(err)}`);
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
    this.title ??= text.split("\n")[0]?.slice(0, 60);
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
      this.notice(`Could not set the mode: ${describeError(err)}`);
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

  /** Leaves this conversation for good: a running turn is cancelled and the bridge lets go of the session. */
  close(): void {
    const session = this.session;
    this.closeSession();
    if (session && this.client) void this.client.endSession(session.sessionId);
  }

  dispose(): void {
    this.detach();
    for (const emitter of [this.sessionChanged, this.turnEnded, this.phases]) emitter.dispose();
    this.store.dispose();
  }

  private async applyModel(session: AgentSession, modelId: string): Promise<void> {
    try {
      await session.setModel(modelId);
      this.lastModels = session.models;
      this.host.rememberModel(session.sessionId, modelId);
      this.log.info(`Model: ${modelId}`);
    } catch (err) {
      this.notice(`Could not switch to the model ${modelId}: ${describeError(err)}`);
    }
    this.setSession({});
  }

  /** A loaded session goes on with the model it ran (as this editor remembers it), not the bridge's default. */
  private async restoreModel(session: AgentSession): Promise<void> {
    const model = this.host.rememberedModel(session.sessionId);
    if (model && model !== session.models?.currentModelId && carriesModel(model, session.models)) {
      await session.setModel(model).catch((err: unknown) => this.log.warn(`Restoring the model ${model}: ${describeError(err)}`));
      this.lastModels = session.models;
    }
  }

  /**
   * Loads `id` into a restarted bridge without replaying it (the panel shows it already), then puts back the
   * mode and model it had. False when it cannot be loaded (the caller opens a new session); undefined when
   * the bridge went away meanwhile.
   */
  private async reload(client: AgentClient, id: string): Promise<boolean | undefined> {
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
      if (mode) await session.setMode(mode).catch((err: unknown) => this.log.warn(`Restoring the mode ${mode}: ${describeError(err)}`));
      if (model && carriesModel(model, session.models)) await session.setModel(model).catch((err: unknown) => this.log.warn(`Restoring the model ${model}: ${describeError(err)}`));
      if (session.models) this.lastModels = session.models;
      this.log.info(`Reloaded session ${id}`);
      return true;
    } catch (err) {
      this.closeSession();
      if (isConnectionLost(err)) return undefined;
      this.notice(`Could not reload the session (${describeError(err)}); a new session goes on below, the messages above stay for reference.`);
      return false;
    }
  }

  /**
   * Makes `session` this conversation's session: its events go to the store. `fresh`: the panel starts from
   * empty (a new or resumed session); else it keeps its items (a reload). `muted`: updates to drop (the replay).
   */
  private adopt(session: AgentSession, opts: { fresh: boolean; muted?: () => boolean }): void {
    this.session = session;
    this.resumeId = session.sessionId;
    if (session.modes) this.lastModes = session.modes;
    if (session.models) this.lastModels = session.models;
    this.sessionSubscriptions = [
      session.onUpdate((update) => {
        if (opts.muted?.()) return;
        const turnId = session.streamingTurn;
        this.store.dispatch(turnId === undefined ? { type: "update", update } : { type: "update", update, turnId });
      }),
      session.onTurnStarted((t) => this.store.dispatch({ type: "turnStarted", turnId: t.turnId, ...describePrompt(t.prompt) })),
      session.onTurnNamed((t) => this.store.dispatch({ type: "turnNamed", ...t })),
      session.onTurnEnded((t) => {
        this.store.dispatch({ type: "turnEnded", ...t });
        this.turnEnded.fire(t);
      }),
      session.onPhase((phase) => {
        this.store.dispatch({ type: "phase", phase });
        this.phases.fire(phase);
      }),
    ];
    this.store.dispatch({ type: "sessionStarted", sessionId: session.sessionId, modes: session.modes, ...(opts.fresh ? {} : { keep: true }) });
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
    const wasBusy = this.session !== undefined && this.session.phase !== "idle";
    this.session = undefined;
    if (wasBusy) this.phases.fire("idle");
    if (this.panelSession.status === "ready") this.setSession({ status: "starting", detail: undefined });
  }

  private setConnection(status: ConnectionStatus, message?: string): void {
    this.store.dispatch({ type: "connection", status, message });
  }

  private setSession(change: Partial<SessionState>): void {
    const models = this.session?.models ?? this.lastModels;
    const modelId = models?.currentModelId;
    const model = modelId ? (models.availableModels.find((m) => m.modelId === modelId)?.name ?? modelId) : undefined;
    this.panelSession = { ...this.panelSession, ...change, queued: this.queue.length, model, modelId };
    this.sessionChanged.fire(this.panelSession);
  }

  /** A line in the conversation (not part of it: the model never sees it). */
  notice(text: string, key?: string): void {
    this.store.dispatch(key ? { type: "notice", text, key } : { type: "notice", text });
  }
}
