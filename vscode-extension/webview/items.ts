/**
 * The HTML of the panel's cards (everything but the streamed markdown, see markdownView.ts), and the status
 * line. Pure string functions of the state, so the unit tests can read them.
 */
import { escapeHtml, type PathLookup, renderInline } from "./markdown";
import { type Attachment, type ConversationItem, type PanelState, type Review, retryText, type TurnUsage } from "../src/panel/state";
import type { DiffContent, PermissionOption, PermissionOptionKind, ToolCallLocation } from "../src/protocol";
import { diffHunks, type Hunk } from "./diff";

export interface ViewContext {
  /** Workspace folders: paths under them are shown relative. */
  folders: string[];
  paths: PathLookup;
}

type Of<K extends ConversationItem["kind"]> = Extract<ConversationItem, { kind: K }>;

export function displayPath(path: string, folders: string[]): string {
  for (const folder of folders) {
    const root = folder.endsWith("/") ? folder : `${folder}/`;
    if (path.startsWith(root)) return path.slice(root.length);
  }
  return path;
}

export function fileLinkHtml(path: string, line: number | undefined, label: string, cls = ""): string {
  const data = `data-path="${escapeHtml(path)}"${line ? ` data-line="${line}"` : ""}`;
  return `<a class="file-link${cls ? ` ${cls}` : ""}" href="#" ${data} title="Open ${escapeHtml(path)}${line ? `:${line}` : ""}">${escapeHtml(label)}</a>`;
}

export function userHtml(item: Of<"user">): string {
  const chips = item.attachments.map((a) => chipHtml(a)).join("");
  return `<div class="who">You</div><div class="text">${escapeHtml(item.text)}</div>${chips ? `<div class="chips">${chips}</div>` : ""}`;
}

function chipHtml(a: Attachment): string {
  if (a.path) return fileLinkHtml(a.path, a.line, a.label, "chip");
  return `<span class="chip" title="attached">${escapeHtml(a.label)}</span>`;
}

export function toolHtml(item: Of<"tool">, ctx: ViewContext): string {
  const diffs = item.diffs.length ? item.diffs : (item.proposed ?? []);
  const review: Review | "applied" | undefined = item.diffs.length ? (item.status === "failed" ? undefined : "applied") : item.review;
  // An edit that was written shows its diff; the model's view of the result (`cat -n` lines) adds nothing.
  const showOutput = item.output && !(item.diffs.length && item.status === "completed");
  const output = showOutput ? `<pre class="output">${escapeHtml(item.output)}</pre>` : "";
  const diffPaths = new Set(diffs.map((d) => d.path));
  const locations = item.locations.filter((l) => !diffPaths.has(l.path));
  return (
    `<div class="tool-head"><span class="tool-kind">${escapeHtml(item.toolKind)}</span><span class="tool-title">${renderInline(item.title, ctx.paths)}</span>${badgeHtml(item.status)}</div>` +
    (locations.length ? `<div class="locations">${locations.map((l) => locationHtml(l, ctx)).join("")}</div>` : "") +
    (item.agent || item.children ? subAgentHtml(item, ctx) : "") +
    output +
    diffs.map((d) => diffHtml(d, ctx, review, item.status)).join("")
  );
}

/** A sub-agent under its `Agent` card: what it is and how it does, then its own work, collapsed (the panel keeps a
 * `details` open across re-renders by its `data-open-key`). */
export function subAgentHtml(item: Of<"tool">, ctx: ViewContext): string {
  const a = item.agent;
  const running = a ? a.status === "running" : item.status === "in_progress" || item.status === "pending";
  const facts = a ? [a.type, a.background ? "background" : "", `${a.toolCalls ?? 0} tool call${a.toolCalls === 1 ? "" : "s"}`, `${formatTokens(a.tokens ?? 0)} tokens`, `${Math.round((a.elapsedMs ?? 0) / 1000)} s`].filter(Boolean) : [];
  const stop = running ? `<button type="button" class="secondary stop-agent" data-action="cancelToolCall" data-tool-call="${escapeHtml(item.toolCallId)}" title="Stop this sub-agent alone; the turn goes on">Stop</button>` : "";
  const children = item.children ?? [];
  const steps = children.filter((c) => c.kind === "tool").length;
  const last = [...children].reverse().find((c) => c.kind === "tool");
  const summary = `${steps} step${steps === 1 ? "" : "s"}${running && last?.kind === "tool" ? ` · ${escapeHtml(plainTitle(last.title))}` : ""}`;
  const body = children.map((c) => childHtml(c, ctx)).join("");
  return (
    `<div class="agent-meta">${facts.map((f) => `<span>${escapeHtml(f)}</span>`).join(" · ")}${stop}</div>` +
    (children.length ? `<details class="subagent" data-open-key="sub-${escapeHtml(item.toolCallId)}"><summary>${summary}</summary><div class="children">${body}</div></details>` : "")
  );
}

const childOutputLines = 12;

function childHtml(child: ConversationItem, ctx: ViewContext): string {
  switch (child.kind) {
    case "tool": {
      // A child's output is its tail: the card stays small while the sub-agent runs.
      const lines = child.output.split("\n");
      const output = lines.length > childOutputLines ? `…\n${lines.slice(-childOutputLines).join("\n")}` : child.output;
      return `<div class="child tool ${escapeHtml(child.status)}" data-id="${escapeHtml(child.id)}">${toolHtml({ ...child, output }, ctx)}</div>`;
    }
    case "agent":
      return `<div class="child agent-text">${escapeHtml(child.text)}</div>`;
    case "thought":
      return `<div class="child thought-text">${escapeHtml(child.text)}</div>`;
    case "user":
      return `<div class="child task"><span class="who">Task</span> ${escapeHtml(child.text)}</div>`;
    default:
      return "";
  }
}

function locationHtml(l: ToolCallLocation, ctx: ViewContext): string {
  const label = displayPath(l.path, ctx.folders) + (l.line ? `:${l.line}` : "");
  return fileLinkHtml(l.path, l.line ?? undefined, label, "location");
}

export function badgeHtml(status: string): string {
  const label = { pending: "pending", in_progress: "running", completed: "✓ done", failed: "✗ failed" }[status] ?? status;
  return `<span class="badge ${escapeHtml(status)}">${label}</span>`;
}

const reviewWords: Record<string, string> = { proposed: "proposed", accepted: "accepted", rejected: "rejected — not written", applied: "written" };

const hunkCache = new WeakMap<DiffContent, Hunk[]>();
const maxDiffLines = 400;

export function diffHtml(diff: DiffContent, ctx: ViewContext, review?: string, status?: string): string {
  let hunks = hunkCache.get(diff);
  if (!hunks) {
    hunks = diffHunks(diff.oldText ?? "", diff.newText);
    hunkCache.set(diff, hunks);
  }
  const word = review === "accepted" && status === "failed" ? "accepted — failed" : review ? reviewWords[review] : undefined;
  const first = hunks[0]?.newStart;
  const head = `<div class="diff-head">${fileLinkHtml(diff.path, first, displayPath(diff.path, ctx.folders))}${diff.oldText === null || diff.oldText === undefined ? '<span class="diff-new">new file</span>' : ""}${word ? `<span class="review ${escapeHtml(review ?? "")}">${word}</span>` : ""}</div>`;
  const out: string[] = [];
  let shown = 0;
  let total = 0;
  for (const [n, hunk] of hunks.entries()) {
    total += hunk.lines.length;
    if (shown >= maxDiffLines) continue;
    if (n > 0 || hunk.oldStart > 1) out.push(`<span class="line hunk">@@ line ${hunk.newStart} @@</span>`);
    for (const l of hunk.lines) {
      if (shown++ >= maxDiffLines) break;
      out.push(`<span class="line ${l.op}">${l.op === "add" ? "+" : l.op === "del" ? "-" : " "} ${escapeHtml(l.text)}</span>`);
    }
  }
  if (total > shown) out.push(`<span class="line more">… ${total - shown} more lines</span>`);
  // Block spans: a newline between them would double the spacing inside <pre>.
  return `<div class="diff">${head}<pre class="diff-body">${out.join("")}</pre></div>`;
}

const optionRank: Record<PermissionOptionKind, number> = { allow_once: 0, reject_once: 1, allow_always: 2, reject_always: 3 };

/**
 * The options as the card shows them: "Allow once" first (the primary button), then "Reject", then the
 * "always" rules (secondary). A destructive request keeps its "always" options behind "More…".
 * `key` is the digit that answers with the option.
 */
export function cardOptions(item: Of<"permission">): { option: PermissionOption; key?: number; primary: boolean; hidden: boolean }[] {
  const sorted = [...item.options].sort((a, b) => optionRank[a.kind] - optionRank[b.kind]);
  let key = 0;
  return sorted.map((option) => {
    const hidden = item.destructive && option.kind === "allow_always";
    return { option, key: hidden ? undefined : ++key, primary: option.kind === "allow_once", hidden };
  });
}

export function permissionHtml(item: Of<"permission">, ctx: ViewContext): string {
  if (item.answer !== undefined) {
    const allowed = item.answerKind?.startsWith("allow");
    const mark = item.answerKind ? (allowed ? "✓" : "✗") : "•";
    return `<span class="answered ${allowed ? "allowed" : "rejected"}">${mark} ${renderInline(item.title, ctx.paths)} — ${escapeHtml(item.answer)}</span>`;
  }
  const options = cardOptions(item);
  const button = (o: (typeof options)[number]): string => {
    const kind = o.option.kind.startsWith("allow") ? "allow" : "reject";
    const cls = ["option", kind, o.option.kind, o.primary ? "primary" : "secondary"].join(" ");
    const title = o.option._meta?.destination ? ` title="Saved to ${escapeHtml(o.option._meta.destination)}"` : "";
    const key = o.key !== undefined ? `<kbd class="key">${o.key}</kbd>` : "";
    return `<button type="button" class="${cls}" data-action="permission" data-option="${escapeHtml(o.option.optionId)}"${o.key !== undefined ? ` data-key="${o.key}"` : ""}${title}>${key}<span class="label">${escapeHtml(o.option.name)}</span></button>`;
  };
  const shown = options.filter((o) => !o.hidden).map(button).join("");
  const hidden = options.filter((o) => o.hidden);
  const more = hidden.length ? `<details class="more"><summary>More…</summary><div class="options">${hidden.map(button).join("")}</div></details>` : "";
  const openDiff = item.hasDiff ? `<button type="button" class="secondary show-diff" data-action="openDiff" title="Open in the diff editor (you can edit the proposed text there)">Show diff</button>` : "";
  const warning = item.destructive ? `<div class="warning">⚠ This deletes or overwrites: check it before you allow it.</div>` : "";
  const diffs = item.diffs.map((d) => diffHtml(d, ctx, "proposed")).join("");
  const keys = options.filter((o) => o.key !== undefined).length;
  return (
    (item.agent ? `<div class="perm-agent">Sub-agent “${escapeHtml(item.agent)}” asks</div>` : "") +
    `<div class="perm-title">Allow <strong>${renderInline(item.title, ctx.paths)}</strong>?</div>${warning}${diffs}` +
    `<div class="options">${shown}${openDiff}</div>${more}` +
    `<input class="feedback" type="text" placeholder="Feedback for the agent (sent with Reject; Enter rejects)">` +
    `<div class="keys-hint">${keys > 1 ? `<kbd>1</kbd>–<kbd>${keys}</kbd> answer` : "<kbd>1</kbd> answers"} · <kbd>Esc</kbd> rejects</div>`
  );
}

export function turnEndHtml(stopReason: string | undefined, error: string | undefined, usage: TurnUsage | undefined, interrupted?: string): string {
  const parts: string[] = [];
  if (interrupted) parts.push(`<span class="reason interrupted">Interrupted: ${escapeHtml(interrupted)}</span>`);
  else if (error) parts.push(`<span class="reason error">Error: ${escapeHtml(error)}</span>`);
  else parts.push(`<span class="reason ${escapeHtml(stopReason ?? "")}">${stopReason === "end_turn" ? "Done" : `Turn ended: ${escapeHtml(stopReason ?? "?")}`}</span>`);
  if (usage && (usage.inputTokens || usage.outputTokens)) {
    parts.push(`${formatTokens(usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens)} in · ${formatTokens(usage.outputTokens)} out`);
  }
  if (usage?.cost !== undefined) parts.push(formatCost(usage.cost, usage.currency));
  if (usage?.contextUsed !== undefined && usage.contextSize) parts.push(`context ${Math.round((100 * usage.contextUsed) / usage.contextSize)}%`);
  return parts.join(" · ");
}

function formatTokens(n: number): string {
  return n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(n);
}

function formatCost(amount: number, currency = "USD"): string {
  return currency === "USD" ? `$${amount.toFixed(4)}` : `${amount.toFixed(4)} ${escapeHtml(currency)}`;
}

/**
 * The header's status: what the turn is doing now — a retry's countdown, waiting for a permission, the tool
 * that runs, thinking — rather than only "working…".
 */
export function statusText(state: PanelState, sessionReady: boolean, now: number): string {
  const { connection, phase } = state;
  if (connection.status === "starting") return "starting the bridge…";
  if (connection.status !== "ready") return connection.status;
  if (!sessionReady) return "starting a session…";
  if (phase === "idle") return "";
  if (phase === "cancelling") return "stopping…";
  if (state.progress?.retry) return retryText(state.progress.retry, now - state.progress.at);
  if (state.progress) return progressText(state.progress.text, state.progress.at, now);
  const turn = state.items.filter((i) => "turnId" in i && i.turnId === state.currentTurn);
  if (turn.some((i) => i.kind === "permission" && i.answer === undefined)) return "waiting for your answer";
  const last = turn[turn.length - 1];
  if (last?.kind === "tool" && (last.status === "in_progress" || last.status === "pending")) return `running ${plainTitle(last.title)}`;
  if (last?.kind === "thought") return "thinking…";
  if (last?.kind === "agent") return "writing…";
  return "working…";
}

/** "…; retrying in 4.0 s" counts down from when it was said. */
export function progressText(text: string, at: number, now: number): string {
  const m = /retrying in ([\d.]+)\s*s/i.exec(text);
  if (!m) return text;
  const left = Math.max(0, Math.ceil(Number(m[1]) - (now - at) / 1000));
  const reason = text.slice(0, m.index).replace(/[;,:\s]+$/, "");
  return `retrying in ${left} s${reason ? ` (${reason})` : ""}`;
}

function plainTitle(title: string): string {
  const t = title.replace(/`/g, "");
  return t.length > 60 ? `${t.slice(0, 57)}…` : t;
}
