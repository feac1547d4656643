/**
 * The bridge's wire contract (shared/PROTOCOL.md, ACP v1 shapes) as typed constants and types.
 * Nothing here imports `vscode`, so the panel, the tests and the node client share it.
 */

export const Method = {
  sessionNew: "session/new",
  sessionLoad: "session/load",
  sessionList: "session/list",
  /** ACP unstable: the bridge lets go of a session (its MCP servers stop). */
  sessionClose: "session/close",
  sessionPrompt: "session/prompt",
  sessionCancel: "session/cancel",
  sessionSetMode: "session/set_mode",
  /** ACP unstable: the session's model (the models are listed in the session/new answer). */
  sessionSetModel: "session/set_model",
  sessionUpdate: "session/update",
  requestPermission: "session/request_permission",
  /** Our extension: stop one running tool call alone (a sub-agent and all it runs); the turn goes on. */
  cancelToolCall: "_bridge/cancel_tool_call",
  /** Ours (issue 23, the bridge's README): what a rewind to before a prompt does, or doing it. */
  rewind: "_bridge/rewind",
  /** Ours: a new session with the conversation before a prompt (the original untouched). */
  fork: "_bridge/fork",
  /** Ours: what the agent changed, in the session (pending review) or in one prompt's turn, per file and hunk. */
  changes: "_bridge/changes",
  /** Ours: undo a change (a file, a hunk, or everything shown), three-way on top of the user's edits. */
  undo: "_bridge/undo",
  /** Ours: keep a change (the review's baseline takes it; no file is written). */
  keep: "_bridge/keep",
} as const;
export type MethodName = (typeof Method)[keyof typeof Method];

// --- content -------------------------------------------------------------------------------------

export interface TextContent {
  type: "text";
  text: string;
}
export interface ResourceContent {
  type: "resource";
  resource: { uri: string; text: string; mimeType?: string };
}
export interface ResourceLinkContent {
  type: "resource_link";
  uri: string;
  name: string;
  mimeType?: string;
}
/** An image in a prompt (base64 `data`; the bridge takes png, jpeg, gif and webp). */
export interface ImageContent {
  type: "image";
  mimeType: string;
  data: string;
}
export type ContentBlock = TextContent | ResourceContent | ResourceLinkContent | ImageContent;

// --- sessions ------------------------------------------------------------------------------------

export const ModeIds = ["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk"] as const;
export type ModeId = (typeof ModeIds)[number];

export interface SessionMode {
  id: string;
  name: string;
  description?: string | null;
}
export interface SessionModes {
  currentModeId: string;
  availableModes: SessionMode[];
}

/** An MCP server the bridge starts for the session (ACP's stdio `McpServer`). */
export interface McpServer {
  name: string;
  command: string;
  args: string[];
  env: { name: string; value: string }[];
}

/** The `agentBridge.mcpServers` setting as ACP servers; entries without a name or command are dropped. */
export function mcpServersFromSettings(raw: unknown): McpServer[] {
  if (!Array.isArray(raw)) return [];
  return raw.flatMap((item: unknown): McpServer[] => {
    if (typeof item !== "object" || item === null) return [];
    const { name, command, args, env } = item as Record<string, unknown>;
    if (typeof name !== "string" || !name.trim() || typeof command !== "string" || !command) return [];
    const argv = Array.isArray(args) ? args.filter((a): a is string => typeof a === "string") : [];
    const vars = typeof env === "object" && env !== null && !Array.isArray(env) ? Object.entries(env as Record<string, unknown>) : [];
    return [{ name: name.trim(), command, args: argv, env: vars.flatMap(([k, v]) => (typeof v === "string" ? [{ name: k, value: v }] : [])) }];
  });
}

export interface NewSessionParams {
  cwd: string;
  mcpServers?: McpServer[];
}
/** ACP unstable `SessionModelState`. */
export interface ModelInfo {
  modelId: string;
  name: string;
  description?: string | null;
}
export interface SessionModels {
  currentModelId: string;
  availableModels: ModelInfo[];
}
/** The model id of a bridge started `--offline` (its demo model, its only one); a Claude bridge refuses it. */
export const OFFLINE_MODEL_ID = "offline-demo";

/**
 * Whether `modelId` may be put back on a session whose bridge lists `models` (after a restart, or for a stored
 * session): never across the offline demo model's edge — a Claude model onto the demo bridge, or the demo model
 * onto a Claude bridge (each bridge refuses the other's).
 */
export function carriesModel(modelId: string, models: SessionModels | undefined): boolean {
  return (modelId === OFFLINE_MODEL_ID) === (models?.currentModelId === OFFLINE_MODEL_ID);
}

export interface NewSessionResult {
  sessionId: string;
  modes?: SessionModes | null;
  models?: SessionModels | null;
}
/** `session/load`'s answer: the loaded session's modes, and (VS Code) its models. */
export interface LoadSessionResult {
  modes?: SessionModes | null;
  models?: SessionModels | null;
}

export interface LoadSessionParams {
  sessionId: string;
  cwd: string;
  mcpServers?: McpServer[];
}

export interface ListSessionsParams {
  cwd?: string;
}
/** A stored session (`session/list`): `updatedAt` is an ISO 8601 time. */
export interface SessionInfo {
  sessionId: string;
  cwd: string;
  title?: string | null;
  updatedAt?: string | null;
}
export interface ListSessionsResult {
  sessions: SessionInfo[];
}

export interface PromptParams {
  sessionId: string;
  prompt: ContentBlock[];
  /** `turnId: true`: the answer names the turn (`_meta.turnId`), what a rewind, fork or Changes take. */
  _meta?: { turnId?: boolean };
}
export const StopReasons = ["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"] as const;
export type StopReason = (typeof StopReasons)[number];
export interface PromptResult {
  stopReason: StopReason;
  _meta?: { turnId?: string };
}

// --- checkpoints: rewind, fork, review (the bridge's `_bridge/*` methods) ------------------------

export type RewindMode = "both" | "code" | "conversation";
/** What to do with a file changed since by someone else: keep it, take the agent's changes out of it, or overwrite. */
export type RewindResolution = "keep" | "merge" | "overwrite";

export interface RewindParams {
  sessionId: string;
  turnId: string;
  mode: RewindMode;
  confirm?: boolean;
  resolutions?: Record<string, RewindResolution>;
}
export interface RewindFile {
  path: string;
  action: "restore" | "recreate" | "delete" | "mode";
  /** Why the file is a conflict (changed since, outside the agent's steps); null: none. */
  conflict: string | null;
  /** The steps (tool calls' titles) that changed it. */
  steps: string[];
}
export interface RewindPreview {
  prompt: { index: number; turnId: string; text: string };
  mode: RewindMode;
  text: string;
  files: RewindFile[];
  /** What no rewind undoes (a command's effects outside the workspace, a network request). */
  irreversible: string[];
  codeProblem: string | null;
}
export interface RewindOutcome {
  text: string;
  conversation: boolean;
  restored: string[];
  merged: string[];
  overwritten: string[];
  kept: { path: string; why: string }[];
}

export interface ReviewHunk {
  index: number;
  id: string;
  /** 0-based lines; a hunk is a contiguous changed region, no context. */
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
}
export interface ChangedFile {
  path: string;
  status: "added" | "deleted" | "modified" | "mode";
  binary: boolean;
  tooBig: boolean;
  oldText: string | null;
  newText: string | null;
  oldMode: string | null;
  newMode: string | null;
  /** Changed since by someone other than the agent. */
  editedSince: boolean;
  hunks: ReviewHunk[];
  steps: { toolCallId: string | null; tool: string; title: string; turnId: string | null }[];
}
export interface ChangesParams {
  sessionId: string;
  turnId?: string;
}
export interface ChangesResult {
  scope: "session" | "turn";
  turnId: string | null;
  files: ChangedFile[];
}
export interface ReviewParams extends ChangesParams {
  path?: string;
  hunk?: number;
  hunkId?: string;
}
export interface ReviewResult {
  done: { path: string; hunk: number | null }[];
  conflicts: { path: string; hunk: number | null; why: string }[];
}
export interface ForkParams {
  sessionId: string;
  turnId?: string;
}
export interface ForkResult {
  sessionId: string;
  modes?: SessionModes | null;
}

export interface CancelParams {
  sessionId: string;
  _meta?: { force?: boolean };
}

export interface CancelToolCallParams {
  sessionId: string;
  toolCallId: string;
}

export interface SetModeParams {
  sessionId: string;
  modeId: string;
}

export interface SetModelParams {
  sessionId: string;
  modelId: string;
}

// --- session/update ------------------------------------------------------------------------------

export type ToolKind = "read" | "edit" | "delete" | "move" | "search" | "execute" | "think" | "fetch" | "other";
export type ToolCallStatus = "pending" | "in_progress" | "completed" | "failed";

export interface ToolCallLocation {
  path: string;
  line?: number | null;
}
export interface DiffContent {
  type: "diff";
  path: string;
  oldText?: string | null;
  newText: string;
  /** Not the whole file: the region from `line`, or (`unread`) only the texts the call names, the file not read. */
  _meta?: { partial?: boolean; line?: number; unread?: boolean };
}
export interface WrappedContent {
  type: "content";
  content: ContentBlock;
}
export interface TerminalContent {
  type: "terminal";
  terminalId: string;
}
export type ToolCallContent = WrappedContent | DiffContent | TerminalContent;

/** How a sub-agent started by an `Agent` call is doing (`_meta.agent` of that call's updates). */
export interface AgentMeta {
  type: string;
  description: string;
  status: "running" | "completed" | "failed" | "stopped";
  background?: boolean;
  startedAt?: number;
  elapsedMs?: number;
  toolCalls?: number;
  tokens?: number;
  lastTool?: string | null;
}

/**
 * How a replayed turn ended (`_meta.turnEnd` on a stored turn's last update in a `session/load` replay):
 * its stop reason; or null with the error it failed with, or `cutOff` (the bridge stopped under it).
 */
export interface TurnEndMeta {
  stopReason: StopReason | null;
  error?: string;
  cutOff?: boolean;
}

/** A retry the turn waits for (`_meta.retry` of a notice chunk): attempt `attempt` of `attempts` in `delayMs`. */
export interface RetryMeta {
  reason: string;
  attempt: number;
  attempts: number;
  delayMs: number;
}

/** Our `_meta` on updates: `parentToolCallId` names the `Agent` call whose sub-agent sent the update. */
export interface NestingMeta {
  parentToolCallId?: string;
  agent?: AgentMeta;
  turnEnd?: TurnEndMeta;
  /** A tool call: its tool says it deletes or overwrites (ours, from `Tool.is_destructive`). */
  destructive?: boolean;
}

/** A notice chunk (`notice`: its level), and a retry's figures when it is one. */
export interface ChunkMeta extends NestingMeta {
  notice?: "info" | "warning" | "error";
  retry?: RetryMeta;
}

export interface ToolCall {
  toolCallId: string;
  title: string;
  kind?: ToolKind;
  status?: ToolCallStatus;
  rawInput?: unknown;
  rawOutput?: unknown;
  content?: ToolCallContent[] | null;
  locations?: ToolCallLocation[] | null;
  _meta?: NestingMeta;
}

export interface PlanEntry {
  content: string;
  priority?: "high" | "medium" | "low";
  status: "pending" | "in_progress" | "completed";
}

export interface AvailableCommand {
  name: string;
  description?: string;
  /** What the command takes after its name (ACP's unstructured input), e.g. "what to keep". */
  input?: { hint?: string } | null;
}

export interface UsageMeta {
  parentToolCallId?: string;
  /** The offline demo model answered: its figures cost nothing. */
  offline?: boolean;
  turnEnd?: TurnEndMeta;
  inputTokens?: number;
  outputTokens?: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
}

export type SessionUpdate =
  | { sessionUpdate: "agent_message_chunk"; content: ContentBlock; _meta?: ChunkMeta }
  | { sessionUpdate: "agent_thought_chunk"; content: ContentBlock; _meta?: NestingMeta }
  /** `messageId` (a replayed prompt): its turn id, what a rewind, fork or Changes take. */
  | { sessionUpdate: "user_message_chunk"; content: ContentBlock; messageId?: string; _meta?: NestingMeta }
  | ({ sessionUpdate: "tool_call" } & ToolCall)
  | ({ sessionUpdate: "tool_call_update" } & Partial<ToolCall> & { toolCallId: string })
  | { sessionUpdate: "plan"; entries: PlanEntry[] }
  | {
      sessionUpdate: "usage_update";
      used?: number;
      size?: number;
      cost?: { amount: number; currency: string } | null;
      _meta?: UsageMeta;
    }
  | { sessionUpdate: "current_mode_update"; currentModeId: string }
  | { sessionUpdate: "available_commands_update"; availableCommands: AvailableCommand[] };

export type SessionUpdateKind = SessionUpdate["sessionUpdate"];

export interface SessionNotification {
  sessionId: string;
  update: SessionUpdate;
}

const updateKinds: ReadonlySet<string> = new Set<SessionUpdateKind>([
  "agent_message_chunk",
  "agent_thought_chunk",
  "user_message_chunk",
  "tool_call",
  "tool_call_update",
  "plan",
  "usage_update",
  "current_mode_update",
  "available_commands_update",
]);

/** A `session/update` we understand, or undefined (unknown kinds are ignored, as ACP asks). */
export function parseSessionNotification(params: unknown): SessionNotification | undefined {
  if (!isRecord(params) || typeof params.sessionId !== "string" || !isRecord(params.update)) return undefined;
  const kind = params.update.sessionUpdate;
  if (typeof kind !== "string" || !updateKinds.has(kind)) return undefined;
  return params as unknown as SessionNotification;
}

// --- permissions ---------------------------------------------------------------------------------

export type PermissionOptionKind = "allow_once" | "allow_always" | "reject_once" | "reject_always";
export interface PermissionOption {
  optionId: string;
  name: string;
  kind: PermissionOptionKind;
  /** An "always" option: the rules it saves (`rules`, every one; `rule`, the first) and the file it saves them in. */
  _meta?: { rule?: string; rules?: string[]; destination?: string };
}

/** A span of a question's command that made it ask (code points of the escaped text), and why. */
export interface QuestionMark {
  start: number;
  end: number;
  why: string;
}
/**
 * The whole truth of a tool-call question (`_meta.question`, /work/notes/question-wire.md): the exact command
 * that runs (control, bidi and zero-width characters made visible), the spans that made it ask, the reason in
 * words, and every path whose resolution differs from the name the call gives it.
 */
export interface QuestionMeta {
  command: string | null;
  marks: QuestionMark[];
  reason: string;
  paths: { named: string; resolved: string }[];
  escaped: boolean;
}
/**
 * A folder-trust question (`_meta.trust`): what the folder's own files would enable, each item verbatim, with what
 * its binding says (`note`: the files it runs, why it stays off…); what changed since it was trusted; and what the
 * sandbox lets the folder's hooks do (`sandbox`), when they will run in it.
 */
export interface TrustMeta {
  folder: string;
  /** `own: "yes"`: a hook of the user's own settings (or an installed plugin's) that runs this folder's files. */
  items: { file: string; kind: string; text: string; note?: string; own?: string }[];
  changed?: { text: string; files: string[] }[];
  sandbox?: string;
  /** What trusting the user's own hooks among the items means (they run outside the sandbox). */
  own?: string;
}
/** A `_meta.question` as the wire note describes it; anything else is ignored (the card falls back to the title). */
export function isQuestion(q: unknown): q is QuestionMeta {
  if (!isRecord(q)) return false;
  return (q.command === null || typeof q.command === "string") && Array.isArray(q.marks) && Array.isArray(q.paths) && typeof q.reason === "string";
}

/** A `_meta.trust` as the folder-trust question sends it. */
export function isTrust(t: unknown): t is TrustMeta {
  if (!isRecord(t) || typeof t.folder !== "string" || !Array.isArray(t.items)) return false;
  if (t.sandbox !== undefined && typeof t.sandbox !== "string") return false;
  if (t.own !== undefined && typeof t.own !== "string") return false;
  if (t.changed !== undefined && !(Array.isArray(t.changed) && t.changed.every((c: unknown) => isRecord(c) && typeof c.text === "string" && Array.isArray(c.files) && c.files.every((f: unknown) => typeof f === "string")))) return false;
  return t.items.every((i: unknown) => isRecord(i) && typeof i.file === "string" && typeof i.kind === "string" && typeof i.text === "string" && (i.note === undefined || typeof i.note === "string") && (i.own === undefined || typeof i.own === "string"));
}

export interface RequestPermissionParams {
  sessionId: string;
  toolCall: ToolCall;
  options: PermissionOption[];
  /** `agent`: the sub-agent asking (our extension); `question`: the question's whole truth; `trust`: a folder-trust question. */
  _meta?: { reason?: string; agent?: { type: string; description: string; parentToolCallId: string }; question?: QuestionMeta; trust?: TrustMeta };
}
export type PermissionOutcome = { outcome: "selected"; optionId: string } | { outcome: "cancelled" };
export interface RequestPermissionResult {
  outcome: PermissionOutcome;
  /** feedback: the user's words for the model; editedText: an accepted edit's text as the user changed it. */
  _meta?: { feedback?: string; editedText?: string };
}

export function isRejectKind(kind: PermissionOptionKind): boolean {
  return kind === "reject_once" || kind === "reject_always";
}

export function selected(optionId: string, feedback?: string, editedText?: string): RequestPermissionResult {
  const result: RequestPermissionResult = { outcome: { outcome: "selected", optionId } };
  if (feedback || editedText !== undefined) {
    result._meta = {};
    if (feedback) result._meta.feedback = feedback;
    if (editedText !== undefined) result._meta.editedText = editedText;
  }
  return result;
}
export const cancelledOutcome: RequestPermissionResult = { outcome: { outcome: "cancelled" } };

// --- initialize ----------------------------------------------------------------------------------

/** What this editor offers the agent (ACP clientCapabilities): we serve no fs/terminal methods. */
export const clientCapabilities = {
  fs: { readTextFile: false, writeTextFile: false },
  terminal: false,
} as const;

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The text of a content block as a person would read it. */
export function contentText(block: ContentBlock): string {
  switch (block.type) {
    case "text":
      return block.text;
    case "resource":
      return block.resource.text;
    case "resource_link":
      return block.name || block.uri;
    case "image":
      return "";
  }
}
