/**
 * The conversation panel's state and its reducer: pure, shared by the extension host (the source of truth,
 * replayed to a webview that reloads) and the webview (which applies the same actions as they arrive).
 */
import {
  type AgentMeta,
  type AvailableCommand,
  contentText,
  type DiffContent,
  type PermissionOption,
  type PermissionOptionKind,
  type PlanEntry,
  type QuestionMeta,
  type RequestPermissionParams,
  type RetryMeta,
  type SessionModes,
  type SessionUpdate,
  type StopReason,
  type ToolCallContent,
  type ToolCallLocation,
  type ToolCallStatus,
  type ToolKind,
  type TrustMeta,
  type TurnEndMeta,
  isQuestion,
  isTrust,
} from "../protocol";
import type { TurnPhase } from "../session";

export interface TurnUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** The turn's cost: the session total at its last usage_update minus the total when it started. */
  cost?: number;
  currency?: string;
  contextUsed?: number;
  contextSize?: number;
}

/** A chip under a user message: what was attached, and the file it opens when it is one (or the image it shows). */
export interface Attachment {
  label: string;
  path?: string;
  line?: number;
  /** An image the prompt carried, as a `data:` URL (its thumbnail). */
  image?: string;
}

/** How an edit's review went: its diff shows on the tool card with this word. */
export type Review = "proposed" | "accepted" | "rejected";

export type ConversationItem =
  /** `bridgeTurn`: the bridge's id of the prompt's turn (its answer's `_meta.turnId`, a replay's `messageId`): what
   * rewind-to-here, fork and the prompt's Changes name. Absent: the bridge did not say (an older bridge, a failed turn). */
  | { kind: "user"; id: string; turnId: number; text: string; attachments: Attachment[]; bridgeTurn?: string }
  | { kind: "agent"; id: string; turnId: number; text: string }
  | { kind: "thought"; id: string; turnId: number; text: string }
  | {
      kind: "tool";
      id: string;
      turnId: number;
      toolCallId: string;
      title: string;
      toolKind: ToolKind;
      status: ToolCallStatus;
      output: string;
      /** The diffs the tool reported (what was written). */
      diffs: DiffContent[];
      locations: ToolCallLocation[];
      /** The diff its permission request proposed, and what became of it (kept when the tool reports none). */
      proposed?: DiffContent[];
      review?: Review;
      /** An `Agent` call: how its sub-agent is doing, and the sub-agent's own work (nested, in order). */
      agent?: AgentMeta;
      children?: ConversationItem[];
      /** The tool says the call deletes or overwrites (`_meta.destructive`). */
      destructive?: boolean;
      /** The person rejected the call's permission question (a rejected call is not a failure). */
      rejected?: boolean;
      /** Its turn ended before the tool said it finished (the bridge stopped under it): why, in a word. */
      cutOff?: "interrupted" | "cancelled" | "failed";
    }
  | {
      kind: "permission";
      id: string;
      turnId: number;
      title: string;
      toolKind: ToolKind;
      options: PermissionOption[];
      hasDiff: boolean;
      toolCallId?: string;
      diffs: DiffContent[];
      /** The call deletes or overwrites, as its tool says (`_meta.destructive`): no "always" up front. */
      destructive: boolean;
      /** The sub-agent asking, when it is not the session's own loop (its `Agent` call's description). */
      agent?: string;
      /** Why it asks, in words (`_meta.reason`). */
      reason?: string;
      /** The question's whole truth (`_meta.question`): absent from an older bridge. */
      question?: QuestionMeta;
      /** A folder-trust question (`_meta.trust`). */
      trust?: TrustMeta;
      /** pending until answered; then the chosen option's name stays as a one-line record. */
      answer?: string;
      answerKind?: PermissionOptionKind;
    }
  /**
   * `interrupted`: the turn never got its answer (the bridge stopped under it): what happened, said calmly.
   * `needsKey`: it failed for want of an API key (the line offers to set one, or to try the offline model).
   */
  | { kind: "turnEnd"; id: string; turnId: number; stopReason?: StopReason; error?: string; interrupted?: string; needsKey?: boolean; usage?: TurnUsage }
  /** `key`: a notice that says how something stands (the bridge restarting): a newer one with the same key replaces it while nothing came between. */
  | { kind: "notice"; id: string; text: string; key?: string };

export type ConnectionStatus = "starting" | "ready" | "failed" | "stopped";

export interface PanelState {
  connection: { status: ConnectionStatus; message?: string };
  sessionId?: string;
  modes?: SessionModes;
  phase: TurnPhase;
  currentTurn: number;
  items: ConversationItem[];
  plan: PlanEntry[];
  commands: AvailableCommand[];
  /** Per running turn: usage so far and the session cost when it started. */
  turns: Record<number, { usage: TurnUsage; startCost?: number }>;
  sessionCost?: number;
  currency?: string;
  /** The context window as the last response left it (the meter): tokens in it, and its size. */
  context?: { used: number; size: number };
  nextNotice: number;
  /** What the turn waits for beyond the stream (a retry's countdown); cleared by the next update. */
  progress?: { text: string; at: number; retry?: RetryMeta };
}

export interface PermissionCardData {
  id: string;
  title: string;
  toolKind: ToolKind;
  options: PermissionOption[];
  hasDiff: boolean;
  toolCallId?: string;
  diffs?: DiffContent[];
  /** The tool says the call deletes or overwrites (`_meta.destructive` of the request's tool call). */
  destructive?: boolean;
  agent?: string;
  reason?: string;
  question?: QuestionMeta;
  trust?: TrustMeta;
}

/** The error code of a turn that failed for want of a usable API key (ACP's `auth_required`). */
const authRequired = -32000;

export type PanelAction =
  | { type: "connection"; status: ConnectionStatus; message?: string }
  /** `keep`: the same conversation goes on in this session (a reload after a crash): the items stay. */
  | { type: "sessionStarted"; sessionId: string; modes?: SessionModes; keep?: boolean }
  | { type: "turnStarted"; turnId: number; text: string; attachments: (string | Attachment)[] }
  /** `code`: the JSON-RPC error code of a failed turn. */
  | { type: "turnEnded"; turnId: number; stopReason?: StopReason; error?: string; code?: number; interrupted?: string }
  /** The bridge's id of a turn (its prompt's answer): the turn's user message can be rewound to, forked, reviewed. */
  | { type: "turnNamed"; turnId: number; bridgeTurnId: string }
  | { type: "phase"; phase: TurnPhase }
  /** `turnId`: the turn the update belongs to (the oldest unanswered prompt); none: the current one. */
  | { type: "update"; update: SessionUpdate; turnId?: number }
  | { type: "permissionRequested"; permission: PermissionCardData }
  | { type: "permissionSettled"; id: string; how: "answered" | "withdrawn"; optionName?: string }
  | { type: "notice"; text: string; key?: string }
  /** A note on what the turn waits for (the bridge's "retrying in 4.0 s"); no text clears it. */
  | { type: "progress"; text?: string; at?: number };

/** The card for a `session/request_permission` (the host builds it from the request's params). */
export function permissionCard(id: string, params: RequestPermissionParams): PermissionCardData {
  const call = params.toolCall;
  const diffs = (call.content ?? []).filter((c): c is DiffContent => c.type === "diff");
  const meta = params._meta;
  const agent = meta?.agent?.description;
  const destructive = call._meta?.destructive;
  const question = isQuestion(meta?.question) ? meta.question : undefined;
  const trust = isTrust(meta?.trust) ? meta.trust : undefined;
  return {
    id,
    title: call.title,
    toolKind: call.kind ?? "other",
    options: params.options,
    hasDiff: diffs.length > 0,
    toolCallId: call.toolCallId,
    diffs,
    ...(destructive !== undefined ? { destructive } : {}),
    ...(agent ? { agent } : {}),
    ...(typeof meta?.reason === "string" && meta.reason ? { reason: meta.reason } : {}),
    ...(question ? { question } : {}),
    ...(trust ? { trust } : {}),
  };
}

export function initialState(): PanelState {
  return { connection: { status: "starting" }, phase: "idle", currentTurn: 0, items: [], plan: [], commands: [], turns: {}, nextNotice: 1 };
}

export function reduce(state: PanelState, action: PanelAction): PanelState {
  switch (action.type) {
    case "connection":
      // A session does not outlive the bridge that served it.
      return {
        ...state,
        connection: { status: action.status, message: action.message },
        ...(action.status === "ready" ? {} : { sessionId: undefined, progress: undefined }),
      };
    case "sessionStarted":
      if (action.keep) return { ...state, sessionId: action.sessionId, modes: action.modes ?? state.modes, progress: undefined };
      return { ...initialState(), connection: state.connection, sessionId: action.sessionId, modes: action.modes };
    case "turnStarted": {
      const attachments = action.attachments.map((a) => (typeof a === "string" ? { label: a } : a));
      const item: ConversationItem = { kind: "user", id: `user-${action.turnId}`, turnId: action.turnId, text: action.text, attachments };
      const usage = emptyUsage();
      return {
        ...state,
        currentTurn: action.turnId,
        items: [...state.items, item],
        turns: { ...state.turns, [action.turnId]: { usage, startCost: state.sessionCost } },
      };
    }
    case "turnEnded":
      return endTurn(state, action);
    case "turnNamed": {
      const items = state.items.map((i) => (i.kind === "user" && i.turnId === action.turnId && !i.bridgeTurn ? { ...i, bridgeTurn: action.bridgeTurnId } : i));
      return items.some((i, n) => i !== state.items[n]) ? { ...state, items } : state;
    }
    case "phase":
      return { ...state, phase: action.phase };
    case "update": {
      const next = applyUpdate(state, action.update, action.turnId ?? state.currentTurn);
      const end = turnEndOf(action.update);
      return end ? reduce(next, { type: "turnEnded", turnId: next.currentTurn, ...replayedEnd(end) }) : next;
    }
    case "permissionRequested": {
      const { destructive, diffs, ...p } = action.permission;
      // The tool's word: on the request, else on its tool call's card; a `delete` tool call always is.
      const card = p.toolCallId ? findTool(state.items, p.toolCallId) : undefined;
      const said = destructive ?? card?.destructive ?? false;
      // The card belongs to its tool call's turn (a question of a turn being interrupted goes with that turn).
      const turnId = card?.turnId ?? state.currentTurn;
      const item: ConversationItem = { kind: "permission", turnId, ...p, diffs: diffs ?? [], destructive: said || p.toolKind === "delete" };
      let next: PanelState = { ...state, items: insertInTurn(state.items, turnId, item) };
      if (p.toolCallId && diffs?.length) {
        next = mapToolCard(next, p.toolCallId, (i) => ({ ...i, proposed: diffs, review: "proposed" }));
      }
      return next;
    }
    case "permissionSettled": {
      const card = state.items.find((i) => i.id === action.id);
      if (action.how === "withdrawn") return { ...state, items: state.items.filter((i) => i.id !== action.id) };
      if (card?.kind !== "permission") return state;
      const kind = card.options.find((o) => o.name === action.optionName)?.kind;
      let next = mapItem(state, action.id, (i) => (i.kind === "permission" ? { ...i, answer: action.optionName ?? "answered", answerKind: kind } : i));
      if (card.toolCallId && kind) {
        const allowed = kind.startsWith("allow");
        const review: Review = allowed ? "accepted" : "rejected";
        next = mapToolCard(next, card.toolCallId, (i) => ({ ...i, ...(card.diffs.length ? { proposed: card.diffs, review } : {}), ...(allowed ? {} : { rejected: true }) }));
      }
      return next;
    }
    case "notice": {
      const last = state.items[state.items.length - 1];
      // How something stands, said again: the newer word replaces the older while nothing came between.
      if (action.key && last?.kind === "notice" && last.key === action.key) return replaceLast(state, { ...last, text: action.text });
      const item: ConversationItem = { kind: "notice", id: `notice-${state.nextNotice}`, text: action.text, ...(action.key ? { key: action.key } : {}) };
      return { ...state, items: [...state.items, item], nextNotice: state.nextNotice + 1 };
    }
    case "progress":
      return { ...state, progress: action.text ? { text: action.text, at: action.at ?? Date.now() } : undefined };
  }
}

/**
 * A turn's end line. An older turn that ends after a newer one started (a message that interrupted it) gets
 * its line before the interrupting message. It leaves no open permission card behind, and no tool card
 * "running": a tool the bridge never finished (it was killed) says the turn stopped under it.
 */
function endTurn(state: PanelState, action: Extract<PanelAction, { type: "turnEnded" }>): PanelState {
  const { [action.turnId]: turn, ...rest } = state.turns;
  const item: ConversationItem = {
    kind: "turnEnd",
    id: `end-${action.turnId}`,
    turnId: action.turnId,
    stopReason: action.stopReason,
    error: action.error,
    ...(action.interrupted ? { interrupted: action.interrupted } : {}),
    ...(action.code === authRequired ? { needsKey: true } : {}),
    usage: turn?.usage,
  };
  const cutOff: "interrupted" | "cancelled" | "failed" = action.interrupted ? "interrupted" : action.stopReason === "cancelled" ? "cancelled" : "failed";
  const items = state.items
    .filter((i) => !(i.kind === "permission" && i.turnId === action.turnId && i.answer === undefined))
    .map((i) => ("turnId" in i && i.turnId === action.turnId ? settleTools(i, cutOff) : i));
  const at = items.findIndex((i) => "turnId" in i && i.turnId > action.turnId);
  const placed = at < 0 ? [...items, item] : [...items.slice(0, at), item, ...items.slice(at)];
  const progress = action.turnId === state.currentTurn ? undefined : state.progress;
  return { ...state, items: placed, turns: rest, progress };
}

/** A tool card (and its sub-agent's cards) still pending or running when its turn ended: stopped, and why. */
function settleTools(item: ConversationItem, why: "interrupted" | "cancelled" | "failed"): ConversationItem {
  if (item.kind !== "tool") return item;
  const children = item.children?.map((c) => settleTools(c, why));
  const childrenChanged = !!children && children.some((c, n) => c !== item.children?.[n]);
  const open = item.status === "pending" || item.status === "in_progress";
  // A background sub-agent goes on after its call returned; a foreground one ends with its turn.
  const agent = item.agent?.status === "running" && !item.agent.background ? { ...item.agent, status: "stopped" as const } : undefined;
  if (!open && !childrenChanged && !agent) return item;
  return { ...item, ...(open ? { status: "failed" as const, cutOff: why } : {}), ...(childrenChanged ? { children } : {}), ...(agent ? { agent } : {}) };
}

/** A replayed turn's end (`_meta.turnEnd` on its last update), if this update carries one. */
function turnEndOf(update: SessionUpdate): TurnEndMeta | undefined {
  const meta: unknown = "_meta" in update ? update._meta : undefined;
  return typeof meta === "object" && meta !== null && "turnEnd" in meta ? (meta as { turnEnd?: TurnEndMeta }).turnEnd : undefined;
}

/** How a replayed turn ended, as the turn-end line says it. */
export function replayedEnd(end: TurnEndMeta): { stopReason?: StopReason; error?: string; interrupted?: string } {
  if (end.stopReason) return { stopReason: end.stopReason };
  if (end.error) return { error: end.error };
  return { interrupted: "the bridge stopped before this turn ended" };
}

/** Updates a sub-agent sends: they go under its `Agent` card (`_meta.parentToolCallId`), not in the log. */
const nestable = new Set(["agent_message_chunk", "agent_thought_chunk", "user_message_chunk", "tool_call", "tool_call_update"]);

function applyUpdate(before: PanelState, update: SessionUpdate, turnId: number): PanelState {
  // A retry the turn waits for (a sub-agent's too): the status counts it down; it is not the answer's text.
  if (update.sessionUpdate === "agent_message_chunk" && update._meta?.retry) {
    return { ...before, progress: { text: retryText(update._meta.retry), at: Date.now(), retry: update._meta.retry } };
  }
  const parent = "_meta" in update && update.sessionUpdate !== "usage_update" ? update._meta?.parentToolCallId : undefined;
  if (parent && nestable.has(update.sessionUpdate)) {
    // The same reducer, on the card's children (a deeper sub-agent's card is itself a child).
    const items = mapTool(before.items, parent, (card) => ({
      ...card,
      children: applyUpdate({ ...before, items: card.children ?? [], progress: undefined }, { ...update, _meta: undefined } as SessionUpdate, card.turnId).items,
    }));
    if (items) return { ...before, items, progress: undefined };
  }
  return applyOwnUpdate(before, update, turnId);
}

/** The tool card `toolCallId`, at any depth. */
function findTool(items: ConversationItem[], toolCallId: string): Extract<ConversationItem, { kind: "tool" }> | undefined {
  for (const item of items) {
    if (item.kind !== "tool") continue;
    if (item.toolCallId === toolCallId) return item;
    const inner = item.children && findTool(item.children, toolCallId);
    if (inner) return inner;
  }
  return undefined;
}

/** `items` with the tool card `toolCallId` (at any depth) replaced by `f(card)`; undefined when it is not there. */
function mapTool(items: ConversationItem[], toolCallId: string, f: (card: Extract<ConversationItem, { kind: "tool" }>) => ConversationItem): ConversationItem[] | undefined {
  for (const [index, item] of items.entries()) {
    if (item.kind !== "tool") continue;
    const replaced = item.toolCallId === toolCallId ? f(item) : item.children && mapTool(item.children, toolCallId, f);
    if (!replaced) continue;
    const next = [...items];
    next[index] = Array.isArray(replaced) ? { ...item, children: replaced } : replaced;
    return next;
  }
  return undefined;
}

/** The state with the tool card `toolCallId` replaced by `f(card)`, at any depth (a sub-agent's call is under its
 * `Agent` card); the same state when there is no such card. */
function mapToolCard(state: PanelState, toolCallId: string, f: (card: Extract<ConversationItem, { kind: "tool" }>) => ConversationItem): PanelState {
  const items = mapTool(state.items, toolCallId, f);
  return items ? { ...state, items } : state;
}

function applyOwnUpdate(before: PanelState, update: SessionUpdate, turnId: number): PanelState {
  // The stream moving on answers the question a retry note raised.
  const moving = update.sessionUpdate !== "usage_update" && update.sessionUpdate !== "available_commands_update";
  const state = moving && before.progress ? { ...before, progress: undefined } : before;
  switch (update.sessionUpdate) {
    case "agent_message_chunk":
      if (update._meta?.notice) return reduce(state, { type: "notice", text: contentText(update.content).trim().replace(/^>\s*/, "") });
      return appendText(state, "agent", contentText(update.content), turnId);
    case "agent_thought_chunk":
      return appendText(state, "thought", contentText(update.content), turnId);
    case "user_message_chunk": {
      // Replay of a loaded session: a prompt after a turn that ended opens the next turn (its usage and end
      // line come with it); within a turn each user message is its own bubble, its blocks joined.
      const current = state.currentTurn;
      const last = state.items[state.items.length - 1];
      const open = state.turns[current] !== undefined;
      if (open && last?.kind === "user") return replaceLast(state, { ...last, text: last.text + contentText(update.content) });
      const next = open ? state : { ...state, currentTurn: current + 1, turns: { ...state.turns, [current + 1]: { usage: emptyUsage(), startCost: state.sessionCost } } };
      const n = state.items.length;
      const named = update.messageId ? { bridgeTurn: update.messageId } : {};
      const item: ConversationItem = { kind: "user", id: `replay-${n}`, turnId: next.currentTurn, text: contentText(update.content), attachments: [], ...named };
      return { ...next, items: [...next.items, item] };
    }
    case "tool_call": {
      const id = `tool-${update.toolCallId}`;
      const existing = state.items.find((i) => i.id === id);
      const fresh: Extract<ConversationItem, { kind: "tool" }> = {
        kind: "tool",
        id,
        turnId: existing && "turnId" in existing ? existing.turnId : turnId,
        toolCallId: update.toolCallId,
        title: update.title,
        toolKind: update.kind ?? "other",
        status: update.status ?? "pending",
        ...contentParts(update.content ?? [], update.rawOutput),
        locations: update.locations ?? [],
      };
      if (existing?.kind === "tool" && existing.proposed) Object.assign(fresh, { proposed: existing.proposed, review: existing.review });
      if (existing?.kind === "tool" && existing.children) Object.assign(fresh, { children: existing.children, agent: existing.agent });
      if (update._meta?.destructive !== undefined) fresh.destructive = update._meta.destructive;
      if (existing) return mapItem(state, id, () => fresh);
      return { ...state, items: insertInTurn(state.items, turnId, fresh) };
    }
    case "tool_call_update":
      return mapItem(state, `tool-${update.toolCallId}`, (i) => {
        if (i.kind !== "tool") return i;
        const next = { ...i };
        if (update.title) next.title = update.title;
        if (update.kind) next.toolKind = update.kind;
        if (update.status) next.status = update.status;
        if (update.locations) next.locations = update.locations;
        if (update._meta?.agent) next.agent = update._meta.agent;
        if (update._meta?.destructive !== undefined) next.destructive = update._meta.destructive;
        // ACP: `content` replaces the tool call's content (Bash progress is the output so far).
        if (update.content) Object.assign(next, contentParts(update.content, update.rawOutput));
        else if (typeof update.rawOutput === "string" && !next.output) next.output = update.rawOutput;
        return next;
      });
    case "plan":
      return { ...state, plan: update.entries };
    case "usage_update": {
      const sessionCost = update.cost?.amount ?? state.sessionCost;
      const currency = update.cost?.currency ?? state.currency;
      const context = update.used !== undefined && update.size ? { used: update.used, size: update.size } : state.context;
      const turn = state.turns[turnId];
      if (!turn) return { ...state, sessionCost, currency, context };
      const m = update._meta ?? {};
      const u = turn.usage;
      const usage: TurnUsage = {
        inputTokens: u.inputTokens + (m.inputTokens ?? 0),
        outputTokens: u.outputTokens + (m.outputTokens ?? 0),
        cacheReadTokens: u.cacheReadTokens + (m.cacheReadTokens ?? 0),
        cacheWriteTokens: u.cacheWriteTokens + (m.cacheWriteTokens ?? 0),
        cost: update.cost ? turnCost(update.cost.amount, turn.startCost) : u.cost,
        currency: update.cost?.currency ?? u.currency,
        contextUsed: update.used ?? u.contextUsed,
        contextSize: update.size ?? u.contextSize,
      };
      return { ...state, sessionCost, currency, context, turns: { ...state.turns, [turnId]: { ...turn, usage } } };
    }
    case "current_mode_update":
      return state.modes ? { ...state, modes: { ...state.modes, currentModeId: update.currentModeId } } : state;
    case "available_commands_update":
      return { ...state, commands: update.availableCommands };
  }
}

function emptyUsage(): TurnUsage {
  return { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
}

/** "API overloaded — retrying in 3 s (attempt 2/4)", `elapsedMs` after the retry was announced. */
export function retryText(retry: RetryMeta, elapsedMs = 0): string {
  const left = Math.max(0, Math.ceil((retry.delayMs - elapsedMs) / 1000));
  const of = retry.attempts ? `/${retry.attempts}` : "";
  return `${retry.reason} — retrying in ${left} s (attempt ${retry.attempt}${of})`;
}

/** A turn's cost from the session totals; a total below the turn's start means the bridge's total began
 * again (a bridge that kept no totals for a resumed session): the turn's cost is then at most that total. */
export function turnCost(sessionTotal: number, atStart: number | undefined): number {
  const start = atStart ?? 0;
  return sessionTotal >= start ? sessionTotal - start : sessionTotal;
}

function contentParts(content: ToolCallContent[], rawOutput: unknown): { output: string; diffs: DiffContent[] } {
  const texts: string[] = [];
  const diffs: DiffContent[] = [];
  for (const c of content) {
    if (c.type === "content") texts.push(contentText(c.content));
    else if (c.type === "diff") diffs.push(c);
  }
  const output = texts.length ? texts.join("\n") : typeof rawOutput === "string" ? rawOutput : "";
  return { output, diffs };
}

/**
 * Where an item of turn `turnId` goes: after everything of that turn and before the first item of a later
 * one (a turn's late updates, sent while a newer message waited for it, stay above that message).
 */
function turnEndIndex(items: ConversationItem[], turnId: number): number {
  const at = items.findIndex((i) => "turnId" in i && i.turnId > turnId);
  return at < 0 ? items.length : at;
}

function insertInTurn(items: ConversationItem[], turnId: number, item: ConversationItem): ConversationItem[] {
  const at = turnEndIndex(items, turnId);
  return [...items.slice(0, at), item, ...items.slice(at)];
}

/** Streamed text joins the turn's last item when it is of the same kind; otherwise starts a new one. */
function appendText(state: PanelState, kind: "agent" | "thought", text: string, turnId: number): PanelState {
  const at = turnEndIndex(state.items, turnId);
  const last = state.items[at - 1];
  if (last && last.kind === kind && last.turnId === turnId) {
    const items = [...state.items];
    items[at - 1] = { ...last, text: last.text + text };
    return { ...state, items };
  }
  const item: ConversationItem = { kind, id: `${kind}-${turnId}-${state.items.length}`, turnId, text };
  return { ...state, items: [...state.items.slice(0, at), item, ...state.items.slice(at)] };
}

function replaceLast(state: PanelState, item: ConversationItem): PanelState {
  return { ...state, items: [...state.items.slice(0, -1), item] };
}

function mapItem(state: PanelState, id: string, f: (i: ConversationItem) => ConversationItem): PanelState {
  const index = state.items.findIndex((i) => i.id === id);
  const item = state.items[index];
  if (!item) return state;
  const items = [...state.items];
  items[index] = f(item);
  return { ...state, items };
}
