import { AgentClient } from "./agentClient";
import type { AgentConnection } from "./connection";
import { Conversation, type ConversationHost, type SessionState } from "./conversation";
import { type Disposable, Emitter } from "./events";
import type { TabInfo } from "./panel/messages";
import { permissionCard } from "./panel/state";
import type { PermissionRequests } from "./permissionRequests";
import type { ContentBlock } from "./protocol";
import { describeError, type TurnEnded, type TurnPhase } from "./session";

/** A conversation's turn ended, or one of its questions waits: for a person who may not be looking. */
export type Attention = { kind: "turnEnded"; conversation: Conversation; ended: TurnEnded } | { kind: "question"; conversation: Conversation; permissionId: string };

/**
 * The panel's conversations, one tab each, all on one bridge: each has its own session, state and running
 * turn; switching tabs shows another's state without stopping anything. The bridge's connection is shared
 * (one protocol client routes each session's updates), and its events (up, crashed, down) reach every tab.
 * A permission question goes to the tab whose session asks. Needs no `vscode`.
 */
export class Conversations implements Disposable {
  private readonly tabs: Conversation[] = [];
  private activeTab: Conversation;
  private client: AgentClient | undefined;
  private nextId = 1;
  private needsKey = false;
  private connection: { status: "starting" | "installing" | "failed"; detail?: string } | undefined = { status: "starting" };
  private readonly subscriptions: Disposable[];
  private readonly perTab = new Map<Conversation, Disposable[]>();
  private readonly activeChanged = new Emitter<Conversation>();
  /** Another tab is shown (the view resets to its state). */
  readonly onActiveChanged = this.activeChanged.event;
  private readonly tabsChanged = new Emitter<TabInfo[]>();
  readonly onTabs = this.tabsChanged.event;
  private readonly sessionChanged = new Emitter<SessionState>();
  /** The shown tab's session state. */
  readonly onSessionState = this.sessionChanged.event;
  private readonly phaseChanged = new Emitter<TurnPhase>();
  /** The shown tab's turn phase. */
  readonly onPhase = this.phaseChanged.event;
  private readonly tabPhase = new Emitter<{ conversation: Conversation; phase: TurnPhase }>();
  /** Any tab's turn phase (a restart waits until every tab is idle). */
  readonly onTabPhase = this.tabPhase.event;
  private readonly attention = new Emitter<Attention>();
  readonly onAttention = this.attention.event;

  constructor(
    private readonly permissions: PermissionRequests,
    private readonly host: ConversationHost,
  ) {
    this.activeTab = this.add();
    this.subscriptions = [
      permissions.onAdded((p) => {
        const tab = this.tabs.find((t) => t.owns(p.params.sessionId)) ?? this.activeTab;
        tab.store.dispatch({ type: "permissionRequested", permission: permissionCard(p.id, p.params) });
        this.attention.fire({ kind: "question", conversation: tab, permissionId: p.id });
        this.publishTabs();
      }),
      permissions.onSettled((s) => {
        for (const tab of this.tabs) tab.store.dispatch({ type: "permissionSettled", id: s.id, how: s.how, optionName: s.option?.name });
        this.publishTabs();
      }),
    ];
  }

  get active(): Conversation {
    return this.activeTab;
  }

  get all(): readonly Conversation[] {
    return this.tabs;
  }

  /** Some tab's turn runs (a settings restart waits for all of them). */
  get busy(): boolean {
    return this.tabs.some((t) => t.busy);
  }

  /** The bridge is up: one client for the connection; every tab reloads its session (or opens one). */
  async attach(connection: AgentConnection, opts: { resume: boolean; notice?: string; noticeIfBlank?: boolean }): Promise<void> {
    this.detach();
    const client = new AgentClient(connection, this.permissions);
    this.client = client;
    this.connection = undefined;
    await Promise.all(this.tabs.map((tab) => tab.attach(client, opts).catch((err: unknown) => this.host.log.error(`Tab ${tab.id}: ${describeError(err)}`))));
    this.publishTabs();
  }

  /** The bridge went away: its questions are answered `cancelled` (nothing waits), every tab lets go of its session. */
  detach(): void {
    this.permissions.cancelAll();
    for (const tab of this.tabs) tab.detach();
    this.client?.dispose();
    this.client = undefined;
  }

  crashed(reason: string, restart: { inMs: number; attempt: number; of: number } | undefined): void {
    this.permissions.cancelAll();
    for (const tab of this.tabs) tab.crashed(reason, restart);
    this.client?.dispose();
    this.client = undefined;
  }

  starting(status: "starting" | "installing", detail?: string): void {
    this.connection = { status, detail };
    for (const tab of this.tabs) tab.starting(status, detail);
  }

  failed(message: string): void {
    this.connection = { status: "failed", detail: message };
    for (const tab of this.tabs) tab.failed(message);
  }

  setNeedsKey(needsKey: boolean): void {
    this.needsKey = needsKey;
    for (const tab of this.tabs) tab.setNeedsKey(needsKey);
  }

  /**
   * A new conversation in a tab of its own, shown at once; `sessionId`: a stored session loaded into it (its
   * history replays). The shown tab is used when it is still blank (no message, no turn).
   */
  async open(opts: { sessionId?: string; title?: string } = {}): Promise<Conversation> {
    const blank = this.activeTab.store.state.items.length === 0 && !this.activeTab.busy;
    if (blank && !opts.sessionId) return this.activeTab; // it is a new session already
    const tab = blank ? this.activeTab : this.add();
    if (opts.title) tab.title = opts.title;
    this.show(tab);
    this.publishTabs();
    if (this.client) await tab.attach(this.client, opts.sessionId ? { resume: false, sessionId: opts.sessionId } : { resume: false });
    this.publishTabs();
    return tab;
  }

  /** Offers the folder's stored sessions (newest first, not those open in a tab); the chosen one opens in a tab. */
  async resume(): Promise<void> {
    const client = this.client;
    const say = (text: string): void => this.activeTab.store.dispatch({ type: "notice", text });
    if (!client) return say("The bridge is not running. Run “Agent Bridge: Show Log” to see why.");
    const cwd = this.host.cwd();
    let stored;
    try {
      stored = await client.listSessions(cwd);
    } catch (err) {
      return say(`Could not list the stored sessions: ${describeError(err)}`);
    }
    const open = new Map(this.tabs.flatMap((t) => (t.sessionId ? [[t.sessionId, t] as const] : [])));
    const picked = await this.host.pickers.pickStoredSession(stored, cwd, this.activeTab.sessionId, new Set(open.keys()));
    if (!picked || client !== this.client) return;
    // A session open in a tab is shown there (it is not loaded twice).
    const tab = open.get(picked);
    if (tab) return this.switchTo(tab.id);
    const title = stored.find((s) => s.sessionId === picked)?.title?.trim();
    await this.open({ sessionId: picked, ...(title ? { title } : {}) });
  }

  /** Shows tab `id`; its running turn, and every other tab's, goes on. */
  switchTo(id: string): void {
    const tab = this.tabs.find((t) => t.id === id);
    if (tab) this.show(tab);
  }

  /** Closes tab `id`: its running turn is cancelled and the bridge lets go of its session; the last tab is never closed. */
  close(id: string): void {
    const tab = this.tabs.find((t) => t.id === id);
    if (!tab) return;
    if (this.tabs.length === 1) {
      void tab.newSession();
      return;
    }
    const index = this.tabs.indexOf(tab);
    tab.close();
    this.tabs.splice(index, 1);
    for (const s of this.perTab.get(tab) ?? []) s.dispose();
    this.perTab.delete(tab);
    tab.dispose();
    if (tab === this.activeTab) this.show(this.tabs[Math.max(0, index - 1)] ?? (this.tabs[0] as Conversation));
    this.publishTabs();
  }

  submit(text: string, attachContext: boolean, extra: ContentBlock[] = []): void {
    this.activeTab.submit(text, attachContext, extra);
    this.publishTabs();
  }

  tabInfo(): TabInfo[] {
    return this.tabs.map((t) => ({
      id: t.id,
      title: t.title ?? "New session",
      active: t === this.activeTab,
      phase: t.phase,
      waiting: t.store.state.items.some((i) => i.kind === "permission" && i.answer === undefined),
    }));
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
    for (const subs of this.perTab.values()) for (const s of subs) s.dispose();
    for (const tab of this.tabs) tab.dispose();
    this.client?.dispose();
    for (const e of [this.activeChanged, this.tabsChanged, this.sessionChanged, this.phaseChanged, this.tabPhase, this.attention]) e.dispose();
  }

  private add(): Conversation {
    const tab = new Conversation(`c${this.nextId++}`, this.host);
    this.tabs.push(tab);
    // A new tab knows how the bridge stands.
    tab.setNeedsKey(this.needsKey);
    if (this.connection?.status === "failed") tab.failed(this.connection.detail ?? "");
    else if (this.connection) tab.starting(this.connection.status, this.connection.detail);
    else tab.store.dispatch({ type: "connection", status: "ready" });
    this.perTab.set(tab, [
      tab.onSessionState((state) => {
        if (tab === this.activeTab) this.sessionChanged.fire(state);
      }),
      tab.onPhase((phase) => {
        if (tab === this.activeTab) this.phaseChanged.fire(phase);
        this.tabPhase.fire({ conversation: tab, phase });
        this.publishTabs();
      }),
      tab.onTurnEnded((ended) => {
        this.attention.fire({ kind: "turnEnded", conversation: tab, ended });
        this.publishTabs();
      }),
    ]);
    return tab;
  }

  private show(tab: Conversation): void {
    if (tab === this.activeTab) return;
    this.activeTab = tab;
    this.activeChanged.fire(tab);
    this.sessionChanged.fire(tab.sessionState);
    this.phaseChanged.fire(tab.phase);
    this.publishTabs();
  }

  private publishTabs(): void {
    this.tabsChanged.fire(this.tabInfo());
  }
}
