/**
 * The HTML of the panel's cards (everything but the streamed markdown, see markdownView.ts), and the status
 * line. Pure string functions of the state, so the unit tests can read them.
 */
import { escapeHtml, type PathLookup, renderMarkdown, renderTitle } from "./markdown";
import { type Attachment, type ConversationItem, type PanelState, type Review, retryText, type TurnUsage } from "../src/panel/state";
import type { DiffContent, PermissionOption, PermissionOptionKind, QuestionMeta, ToolCallLocation, ToolKind, TrustMeta } from "../src/protocol";
import { diffHunks, type Hunk } from "./diff";
import { visible } from "../src/visible";

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
  // The path opened is the path as it is; what a person reads has its hiding characters escaped (a U+202E in
  // `notes\u{202e}txt.sh` drew it as `noteshs.txt`: attack round 34).
  const data = `data-path="${escapeHtml(path)}"${line ? ` data-line="${line}"` : ""}`;
  return `<a class="file-link${cls ? ` ${cls}` : ""}" href="#" ${data} title="Open ${escapeHtml(visible(path))}${line ? `:${line}` : ""}">${escapeHtml(visible(label))}</a>`;
}

export function userHtml(item: Of<"user">): string {
  const chips = item.attachments.map((a) => chipHtml(a)).join("");
  // A prompt the bridge named: go back to before it, see what it changed, or branch off from it.
  const actions = item.bridgeTurn
    ? `<div class="user-actions" data-turn="${escapeHtml(item.bridgeTurn)}">` +
      `<button type="button" class="secondary" data-user="rewind" title="Rewind to before this message: the code, the conversation or both (a preview first)">↶ Rewind</button>` +
      `<button type="button" class="secondary" data-user="changes" title="What the agent changed for this message: keep or undo per file and per hunk">Changes</button>` +
      `<button type="button" class="secondary" data-user="fork" title="A new conversation from before this message; this one stays as it is">Fork</button></div>`
    : "";
  return `<div class="who">You</div><div class="text">${escapeHtml(item.text)}</div>${chips ? `<div class="chips">${chips}</div>` : ""}${actions}`;
}

function chipHtml(a: Attachment): string {
  // Only an image the panel itself read (a data: URL) is shown; the CSP allows no other source anyway.
  if (a.image?.startsWith("data:image/")) return `<img class="chip-image" src="${escapeHtml(a.image)}" alt="${escapeHtml(a.label)}" title="${escapeHtml(a.label)}">`;
  if (a.path) return fileLinkHtml(a.path, a.line, a.label, "chip");
  return `<span class="chip" title="attached">${escapeHtml(a.label)}</span>`;
}

/** What a card calls its kind: a word a person reads ("run", not "execute"); a sub-agent's card is an agent's. */
export function kindLabel(item: Of<"tool">): string {
  if (item.agent || item.children) return "agent";
  const words: Record<ToolKind, string> = { read: "read", edit: "edit", delete: "delete", move: "move", search: "search", execute: "run", think: "plan", fetch: "fetch", other: "tool" };
  return words[item.toolKind];
}

export function toolHtml(item: Of<"tool">, ctx: ViewContext): string {
  // A proposal that waits for its answer shows its diff once: on the question's card.
  const proposed = item.review === "proposed" ? [] : (item.proposed ?? []);
  const diffs = item.diffs.length ? item.diffs : proposed;
  const review: Review | "applied" | undefined = item.diffs.length ? (item.status === "failed" ? undefined : "applied") : item.review;
  // An edit that was written shows its diff; the model's view of the result (`cat -n` lines) adds nothing. A
  // planning tool's result is its instructions to the model (the plan itself shows below the conversation).
  const planning = item.toolKind === "think" && !item.agent && !item.children;
  const showOutput = item.output && !(item.diffs.length && item.status === "completed") && !(planning && item.status === "completed");
  const output = showOutput ? `<pre class="output">${escapeHtml(item.output)}</pre>` : "";
  const diffPaths = new Set(diffs.map((d) => d.path));
  const locations = item.locations.filter((l) => !diffPaths.has(l.path));
  return (
    `<div class="tool-head"><span class="tool-kind">${escapeHtml(kindLabel(item))}</span><span class="tool-title">${renderTitle(item.title, item.toolKind, ctx.paths)}</span>${badgeHtml(item.status, item)}</div>` +
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

/**
 * A sub-agent's messages, rendered once each: its card is painted again at every update of the sub-agent, and
 * rendering all of them every time took ~0.4 s a paint for 150 messages (the panel froze while it ran). The
 * rendering is kept by message, for as long as its text is the same (links the host confirms later are
 * upgraded after each paint, as for the conversation's own messages).
 */
const renderedChildren = new WeakMap<object, { text: string; html: string }>();

function childMarkdown(child: Of<"agent">, ctx: ViewContext): string {
  const kept = renderedChildren.get(child);
  if (kept?.text === child.text) return kept.html;
  const html = renderMarkdown(child.text, ctx.paths);
  renderedChildren.set(child, { text: child.text, html });
  return html;
}

function childHtml(child: ConversationItem, ctx: ViewContext): string {
  switch (child.kind) {
    case "tool": {
      // A child's output is its tail: the card stays small while the sub-agent runs.
      const lines = child.output.split("\n");
      const output = lines.length > childOutputLines ? `…\n${lines.slice(-childOutputLines).join("\n")}` : child.output;
      return `<div class="child tool ${escapeHtml(child.status)}" data-id="${escapeHtml(child.id)}">${toolHtml({ ...child, output }, ctx)}</div>`;
    }
    case "agent":
      return `<div class="child agent-text md">${childMarkdown(child, ctx)}</div>`;
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

/** A card's status: a rejected call was not a failure, and one its turn left behind says the turn stopped. */
export function badgeHtml(status: string, how: { rejected?: boolean; cutOff?: string } = {}): string {
  if (status === "failed" && how.rejected) return `<span class="badge rejected">✗ rejected</span>`;
  if (status === "failed" && how.cutOff) {
    const word = how.cutOff === "interrupted" ? "■ interrupted" : how.cutOff === "cancelled" ? "■ stopped" : "■ not finished";
    return `<span class="badge stopped" title="The turn ended before this tool finished">${word}</span>`;
  }
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
  const head = `<div class="diff-head">${fileLinkHtml(diff.path, first, displayPath(diff.path, ctx.folders))}${diff._meta?.unread ? '<span class="diff-new">the change only: file not read</span>' : diff.oldText === null || diff.oldText === undefined ? '<span class="diff-new">new file</span>' : ""}${word ? `<span class="review ${escapeHtml(review ?? "")}">${word}</span>` : ""}</div>`;
  const out: string[] = [];
  let shown = 0;
  let total = 0;
  for (const [n, hunk] of hunks.entries()) {
    total += hunk.lines.length;
    if (shown >= maxDiffLines) continue;
    if (n > 0 || hunk.oldStart > 1) out.push(`<span class="line hunk">@@ line ${hunk.newStart} @@</span>`);
    for (const l of hunk.lines) {
      if (shown++ >= maxDiffLines) break;
      // A file's hiding characters written out, as the terminal's diff does (bidi controls in a proposed script
      // drew `touch …` inside a comment: attack round 34); a CRLF line's own CR is its line ending, not text.
      const text = visible(l.text.endsWith("\r") ? l.text.slice(0, -1) : l.text, { keepTabs: true });
      out.push(`<span class="line ${l.op}">${l.op === "add" ? "+" : l.op === "del" ? "-" : " "} ${escapeHtml(text)}</span>`);
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
 * `key` is the digit that answers with the option. "Always allow" has none: a new card takes the keyboard, and a
 * digit the person meant for the prompt (one the model asked for: "reply 1 or 2") must never save a rule — it
 * takes a click (attack on the panel, round 15).
 */
export function cardOptions(item: Of<"permission">): { option: PermissionOption; key?: number; primary: boolean; hidden: boolean }[] {
  const sorted = [...item.options].sort((a, b) => optionRank[a.kind] - optionRank[b.kind]);
  let key = 0;
  return sorted.map((option) => {
    const hidden = item.destructive && option.kind === "allow_always";
    const keyed = !hidden && option.kind !== "allow_always";
    return { option, key: keyed ? ++key : undefined, primary: option.kind === "allow_once", hidden };
  });
}

export function permissionHtml(item: Of<"permission">, ctx: ViewContext): string {
  if (item.answer !== undefined) {
    const allowed = item.answerKind?.startsWith("allow");
    const mark = item.answerKind ? (allowed ? "✓" : "✗") : "•";
    const what = item.question?.command ? `<code>${escapeHtml(oneLine(item.question.command))}</code>` : renderTitle(item.title, item.toolKind, ctx.paths);
    return `<span class="answered ${allowed ? "allowed" : "rejected"}">${mark} ${what} — ${escapeHtml(item.answer)}</span>`;
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
  // An "always" choice saves every rule it lists; one its name does not spell out is listed here.
  const unnamed = options.flatMap((o) => (o.option._meta?.rules ?? []).filter((r) => !o.option.name.includes(r)).map((r) => `${o.option.kind.startsWith("allow") ? "allow" : "reject"} ${r}`));
  const rules = unnamed.length ? `<div class="perm-rules">The “always” choice also saves: ${unnamed.map((r) => `<code>${escapeHtml(r)}</code>`).join(", ")}</div>` : "";
  const hidden = options.filter((o) => o.hidden);
  const more = hidden.length ? `<details class="more"><summary>More…</summary><div class="options">${hidden.map(button).join("")}</div></details>` : "";
  const openDiff = item.hasDiff ? `<button type="button" class="secondary show-diff" data-action="openDiff" title="Open in the diff editor (you can edit the proposed text there)">Show diff</button>` : "";
  const warning = item.destructive ? `<div class="warning">⚠ This deletes or overwrites: check it before you allow it.</div>` : "";
  const diffs = item.diffs.map((d) => diffHtml(d, ctx, "proposed")).join("");
  const keys = options.filter((o) => o.key !== undefined).length;
  const body = item.trust ? trustHtml(item.trust) : item.question ? questionHtml(item.question, item.title, item.toolKind, ctx) : `<div class="perm-title">Allow <strong>${renderTitle(item.title, item.toolKind, ctx.paths)}</strong>?</div>${item.reason ? `<div class="perm-reason">${codeSpans(item.reason)}</div>` : ""}`;
  return (
    (item.agent ? `<div class="perm-agent">Sub-agent “${escapeHtml(item.agent)}” asks</div>` : "") +
    `${body}${warning}${diffs}` +
    `<div class="options">${shown}${openDiff}</div>${more}${rules}` +
    (item.trust ? "" : `<input class="feedback" type="text" placeholder="Feedback for the agent (sent with Reject; Enter rejects)">`) +
    `<div class="keys-hint">${keys > 1 ? `<kbd>1</kbd>–<kbd>${keys}</kbd> answer` : "<kbd>1</kbd> answers"} · <kbd>Esc</kbd> rejects</div>`
  );
}

/**
 * A question's whole truth (`_meta.question`): the command that runs, every line, in a monospace block with
 * the parts that made it ask marked (their reason as a tooltip and, numbered, in a legend), the reason in
 * words, and each path whose resolution differs as `named → resolved`.
 */
export function questionHtml(q: QuestionMeta, title: string, kind: string, ctx: ViewContext): string {
  const head = q.command !== null ? `<div class="perm-title">Allow this command?</div>` : `<div class="perm-title">Allow <strong>${renderTitle(title, kind, ctx.paths)}</strong>?</div>`;
  const marks = [...q.marks].filter((m) => m.end > m.start).sort((a, b) => a.start - b.start);
  // Marks count code points of the escaped text (not UTF-16 units). Nothing is added inside the command's
  // text (a number there could be read as part of it): the reasons are a tooltip and a legend below.
  const chars = Array.from(q.command ?? "");
  const legend: string[] = [];
  const said = new Set<string>();
  let command = "";
  let at = 0;
  for (const m of marks) {
    const start = Math.max(at, Math.min(m.start, chars.length));
    const end = Math.min(m.end, chars.length);
    if (end <= start) continue;
    const part = chars.slice(start, end).join("");
    command += `${escapeHtml(chars.slice(at, start).join(""))}<mark title="${escapeHtml(m.why.replaceAll("`", ""))}">${escapeHtml(part)}</mark>`;
    legend.push(`<li><code>${escapeHtml(oneLine(part))}</code>: ${codeSpans(m.why)}</li>`);
    said.add(m.why);
    at = end;
  }
  // The reason in words is the marks' reasons joined ("; "): only what the legend does not already say.
  const reason = q.reason
    .split("; ")
    .filter((r) => r && !said.has(r))
    .join("; ");
  command += escapeHtml(chars.slice(at).join(""));
  const marked = legend.length ? `<ul class="marks">${legend.join("")}</ul>` : "";
  const paths = q.paths.length ? `<ul class="perm-paths">${q.paths.map((p) => `<li><code>${escapeHtml(p.named)}</code> → <code>${escapeHtml(p.resolved)}</code></li>`).join("")}</ul>` : "";
  const escaped = q.escaped ? `<div class="perm-escaped">Characters that do not show (controls, direction marks, zero-width) are written out as <code>\\x..</code> / <code>\\u{..}</code>.</div>` : "";
  return (
    head +
    (q.command !== null ? `<pre class="perm-command">${command}</pre>` : "") +
    marked +
    (reason ? `<div class="perm-reason">${codeSpans(reason)}</div>` : "") +
    paths +
    escaped
  );
}

/** A reason the bridge wrote: plain text whose `backticked` names show as code (nothing else is markup). */
function codeSpans(text: string): string {
  return escapeHtml(text).replace(/`([^`\n]+)`/g, "<code>$1</code>");
}

/**
 * A folder-trust question: what the folder's own files would enable, every item verbatim with what its binding says
 * (the files it runs, why it stays off); what changed since it was trusted; what the sandbox lets its hooks do.
 */
export function trustHtml(t: TrustMeta): string {
  // The bridge sends the items escaped; escaped again here (it changes nothing then) so that no bridge can draw
  // a hook's bidi controls raw on the card (attack round 34).
  const shown = (text: string): string => escapeHtml(visible(text));
  const block = (text: string): string => escapeHtml(visible(text, { keepNewlines: true }));
  const note = (text: string | undefined): string => (text ? `<div class="trust-note">${block(text)}</div>` : "");
  // a hook of the user's own that runs the folder's files: said so, its file being the user's
  const kind = (i: TrustMeta["items"][number]): string => (i.own === "yes" ? "your hook, running this folder's files" : shown(i.kind));
  const items = t.items.map((i) => `<li><div class="trust-item-head"><code>${shown(i.file)}</code> <span class="trust-kind">${kind(i)}</span></div><pre class="trust-text">${block(i.text)}</pre>${note(i.note)}</li>`).join("");
  const changed = (t.changed ?? []).map((c) => `<li>${c.files.map((f) => `<code>${shown(f)}</code>`).join(", ")} changed since you trusted <code>${shown(oneLine(c.text))}</code></li>`).join("");
  return (
    `<div class="perm-title">Trust the folder <code>${shown(t.folder)}</code>?</div>` +
    `<div class="perm-reason">Its own files${t.items.some((i) => i.own === "yes") ? " (and your hooks that run them)" : ""} would enable ${t.items.length === 1 ? "this" : `these ${t.items.length} things`}, which run or allow more than the defaults:</div>` +
    `<ul class="trust-items">${items}</ul>` +
    (changed ? `<ul class="trust-changed">${changed}</ul>` : "") +
    (t.sandbox ? `<div class="trust-sandbox">${shown(t.sandbox)}</div>` : "") +
    (t.own ? `<div class="trust-sandbox trust-own">${shown(t.own)}</div>` : "")
  );
}

function oneLine(text: string): string {
  return text.replace(/\r?\n/g, " ⏎ ");
}

/** How a turn ended, in words (ACP's stop reasons are the wire's, not a person's). */
function endWords(stopReason: string | undefined): string {
  switch (stopReason) {
    case "end_turn":
      return "Done";
    case "cancelled":
      return "Stopped (cancelled)";
    case "max_tokens":
      return "Stopped: the answer reached its length limit (max_tokens)";
    case "max_turn_requests":
      return "Stopped: the turn reached its limit of model requests";
    case "refusal":
      return "The model declined to answer (refusal)";
    default:
      return `Turn ended: ${stopReason ?? "?"}`;
  }
}

export function turnEndHtml(stopReason: string | undefined, error: string | undefined, usage: TurnUsage | undefined, interrupted?: string, needsKey?: boolean): string {
  const parts: string[] = [];
  if (interrupted) parts.push(`<span class="reason interrupted">Interrupted: ${escapeHtml(interrupted)}</span>`);
  else if (error && needsKey) {
    const buttons = `<button type="button" data-command="agentBridge.setApiKey">Set API key</button> <button type="button" class="secondary" data-command="agentBridge.tryOffline">Try it offline</button>`;
    return `<span class="reason error" title="${escapeHtml(error)}">No API key: the bridge has no Anthropic API key to ask the model with. Set one, or try the offline demo model.</span><div class="turn-actions">${buttons}</div>`;
  } else if (error) parts.push(`<span class="reason error">Error: ${escapeHtml(error)}</span>`);
  else parts.push(`<span class="reason ${escapeHtml(stopReason ?? "")}">${escapeHtml(endWords(stopReason))}</span>`);
  if (usage && (usage.inputTokens || usage.outputTokens)) {
    parts.push(`${formatTokens(usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens)} in · ${formatTokens(usage.outputTokens)} out`);
  }
  if (usage?.cost !== undefined) parts.push(formatCost(usage.cost, usage.currency));
  if (usage?.contextUsed !== undefined && usage.contextSize) parts.push(`context ${Math.round((100 * usage.contextUsed) / usage.contextSize)}%`);
  return parts.join(" · ");
}

/** The context meter: how full the context window is, and what the session cost so far (none offline). */
export function meterText(state: PanelState): { percent: number; text: string; title: string } | undefined {
  const c = state.context;
  if (!c || !c.size) return undefined;
  const percent = Math.min(100, Math.round((100 * c.used) / c.size));
  const cost = state.sessionCost !== undefined ? ` · ${formatCost(state.sessionCost, state.currency)}` : "";
  return {
    percent,
    text: `${percent}%${cost}`,
    title: `Context: ${formatTokens(c.used)} of ${formatTokens(c.size)} tokens (${percent}%)${state.sessionCost !== undefined ? `; this session so far ${formatCost(state.sessionCost, state.currency)}` : ""}. Compact summarizes the conversation to free it.`,
  };
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
