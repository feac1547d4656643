/**
 * The conversation panel's state and its reducer: pure, shared by the extension host (the source of truth,
 * replayed to a webview that reloads) and the webview (which applies the same actions as they arrive).
 */
import {
  type AvailableCommand,
  contentText,
  type DiffContent,
  type PermissionOption,
  type PlanEntry,
  type SessionModes,
  type SessionUpdate,
  type StopReason,
  type ToolCallContent,
  type ToolCallStatus,
  type ToolKind,
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

export type ConversationItem =
  | { kind: "user"; id: string; turnId: number; text: string; attachments: string[] }
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
      diffs: DiffContent[];
    }
  | {
      kind: "permission";
      id: string;
      turnId: number;
      title: string;
      toolKind: ToolKind;
      options: PermissionOption[];
      hasDiff: boolean;
      /** pending until answered; then the chosen option's name stays as a one-line record. */
      answer?: string;
    }
  | { kind: "turnEnd"; id: string; turnId: number; stopReason?: StopReason; error?: string; usage?: TurnUsage }
  | { kind: "notice"; id: string; text: string };

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
  nextNotice: number;
}

export interface PermissionCardData {
  id: string;
  title: string;
  toolKind: ToolKind;
  options: PermissionOption[];
  hasDiff: boolean;
}

export type PanelAction =
  | { type: "connection"; status: ConnectionStatus; message?: string }
  | { type: "sessionStarted"; sessionId: string; modes?: SessionModes }
  | { type: "turnStarted"; turnId: number; text: string; attachments: string[] }
  | { type: "turnEnded"; turnId: number; stopReason?: StopReason; error?: string }
  | { type: "phase"; phase: TurnPhase }
  | { type: "update"; update: SessionUpdate }
  | { type: "permissionRequested"; permission: PermissionCardData }
  | { type: "permissionSettled"; id: string; how: "answered" | "withdrawn"; optionName?: string }
  | { type: "notice"; text: string };

export function initialState(): PanelState {
  return { connection: { status: "starting" }, phase: "idle", currentTurn: 0, items: [], plan: [], commands: [], turns: {}, nextNotice: 1 };
}

export function reduce(state: PanelState, action: PanelAction): PanelState {
  switch (action.type) {
    case "connection":
      return { ...state, connection: { status: action.status, message: action.message } };
    case "sessionStarted":
      return { ...initialState(), connection: state.connection, sessionId: action.sessionId, modes: action.modes };
    case "turnStarted": {
      const item: ConversationItem = { kind: "user", id: `user-${action.turnId}`, turnId: action.turnId, text: action.text, attachments: action.attachments };
      const usage: TurnUsage = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
      return {
        ...state,
        currentTurn: action.turnId,
        items: [...state.items, item],
        turns: { ...state.turns, [action.turnId]: { usage, startCost: state.sessionCost } },
      };
    }
    case "turnEnded": {
      const { [action.turnId]: turn, ...rest } = state.turns;
      const item: ConversationItem = {
        kind: "turnEnd",
        id: `end-${action.turnId}`,
        turnId: action.turnId,
        stopReason: action.stopReason,
        error: action.error,
        usage: turn?.usage,
      };
      // A turn that ends leaves no open permission card behind.
      const items = state.items.filter((i) => !(i.kind === "permission" && i.turnId === action.turnId && i.answer === undefined));
      return { ...state, items: [...items, item], turns: rest };
    }
    case "phase":
      return { ...state, phase: action.phase };
    case "update":
      return applyUpdate(state, action.update);
    case "permissionRequested": {
      const p = action.permission;
      const item: ConversationItem = { kind: "permission", turnId: state.currentTurn, ...p };
      return { ...state, items: [...state.items, item] };
    }
    case "permissionSettled":
      if (action.how === "withdrawn") return { ...state, items: state.items.filter((i) => i.id !== action.id) };
      return mapItem(state, action.id, (i) => (i.kind === "permission" ? { ...i, answer: action.optionName ?? "answered" } : i));
    case "notice": {
      const item: ConversationItem = { kind: "notice", id: `notice-${state.nextNotice}`, text: action.text };
      return { ...state, items: [...state.items, item], nextNotice: state.nextNotice + 1 };
    }
  }
}

function applyUpdate(state: PanelState, update: SessionUpdate): PanelState {
  const turnId = state.currentTurn;
  switch (update.sessionUpdate) {
    case "agent_message_chunk":
      return appendText(state, "agent", contentText(update.content));
    case "agent_thought_chunk":
      return appendText(state, "thought", contentText(update.content));
    case "user_message_chunk": {
      // Replay of a loaded session: each user message becomes its own bubble.
      const last = state.items[state.items.length - 1];
      if (last?.kind === "user") return replaceLast(state, { ...last, text: last.text + contentText(update.content) });
      const n = state.items.length;
      return { ...state, items: [...state.items, { kind: "user", id: `replay-${n}`, turnId, text: contentText(update.content), attachments: [] }] };
    }
    case "tool_call": {
      const id = `tool-${update.toolCallId}`;
      const existing = state.items.find((i) => i.id === id);
      const fresh: ConversationItem = {
        kind: "tool",
        id,
        turnId,
        toolCallId: update.toolCallId,
        title: update.title,
        toolKind: update.kind ?? "other",
        status: update.status ?? "pending",
        ...contentParts(update.content ?? [], update.rawOutput),
      };
      if (existing) return mapItem(state, id, () => fresh);
      return { ...state, items: [...state.items, fresh] };
    }
    case "tool_call_update":
      return mapItem(state, `tool-${update.toolCallId}`, (i) => {
        if (i.kind !== "tool") return i;
        const next = { ...i };
        if (update.title) next.title = update.title;
        if (update.kind) next.toolKind = update.kind;
        if (update.status) next.status = update.status;
        // ACP: `content` replaces the tool call's content (Bash progress is the output so far).
        if (update.content) Object.assign(next, contentParts(update.content, update.rawOutput));
        else if (typeof update.rawOutput === "string" && !next.output) next.output = update.rawOutput;
        return next;
      });
    case "plan":
      return { ...state, plan: update.entries };
    case "usage_update": {
      const sessionCost = update.cost?.amount ?? state.sessionCost;
      const turn = state.turns[turnId];
      if (!turn) return { ...state, sessionCost };
      const m = update._meta ?? {};
      const u = turn.usage;
      const usage: TurnUsage = {
        inputTokens: u.inputTokens + (m.inputTokens ?? 0),
        outputTokens: u.outputTokens + (m.outputTokens ?? 0),
        cacheReadTokens: u.cacheReadTokens + (m.cacheReadTokens ?? 0),
        cacheWriteTokens: u.cacheWriteTokens + (m.cacheWriteTokens ?? 0),
        cost: update.cost ? update.cost.amount - (turn.startCost ?? 0) : u.cost,
        currency: update.cost?.currency ?? u.currency,
        contextUsed: update.used ?? u.contextUsed,
        contextSize: update.size ?? u.contextSize,
      };
      return { ...state, sessionCost, turns: { ...state.turns, [turnId]: { ...turn, usage } } };
    }
    case "current_mode_update":
      return state.modes ? { ...state, modes: { ...state.modes, currentModeId: update.currentModeId } } : state;
    case "available_commands_update":
      return { ...state, commands: update.availableCommands };
  }
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

/** Streamed text joins the last item when it is of the same kind and turn; otherwise starts a new one. */
function appendText(state: PanelState, kind: "agent" | "thought", text: string): PanelState {
  const last = state.items[state.items.length - 1];
  if (last && last.kind === kind && last.turnId === state.currentTurn) return replaceLast(state, { ...last, text: last.text + text });
  const item: ConversationItem = { kind, id: `${kind}-${state.currentTurn}-${state.items.length}`, turnId: state.currentTurn, text };
  return { ...state, items: [...state.items, item] };
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
