/**
 * The conversation panel's script. It keeps a copy of the panel state (the same reducer as the host), and
 * renders at most once per animation frame, re-rendering only the items whose object changed.
 */
import { escapeHtml, renderInline, renderMarkdown } from "../src/panel/markdown";
import type { FromWebview, ToWebview } from "../src/panel/messages";
import { type ConversationItem, initialState, type PanelState, reduce, type TurnUsage } from "../src/panel/state";
import type { DiffContent, PermissionOption } from "../src/protocol";
import { lineDiff } from "./diff";

declare function acquireVsCodeApi(): { postMessage(message: FromWebview): void };
const vscode = acquireVsCodeApi();

function $(id: string): HTMLElement {
  const el = document.getElementById(id);
  if (!el) throw new Error(`missing #${id}`);
  return el;
}
const log = $("log");
const planEl = $("plan");
const modeSelect = $("mode") as HTMLSelectElement;
const connectionEl = $("connection");
const banner = $("banner");
const input = $("input") as HTMLTextAreaElement;
const sendButton = $("send") as HTMLButtonElement;
const stopButton = $("stop") as HTMLButtonElement;
const attach = $("attach") as HTMLInputElement;
const attachLabel = $("attach-label");
const contextName = $("context-name");
const jump = $("jump") as HTMLButtonElement;

let state: PanelState = initialState();
let scheduled = false;
const rendered = new Map<string, { item: ConversationItem; el: HTMLElement }>();
let renderedPlan: PanelState["plan"] | undefined;
let renderedModes: PanelState["modes"] | undefined;

// --- auto-scroll: follow the stream until the user scrolls up; resume once back at the bottom ---------
let stickToBottom = true;
log.addEventListener("scroll", () => {
  stickToBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
  jump.hidden = stickToBottom;
});
jump.addEventListener("click", () => {
  stickToBottom = true;
  jump.hidden = true;
  log.scrollTop = log.scrollHeight;
});

window.addEventListener("message", (event: MessageEvent<ToWebview>) => {
  const msg = event.data;
  switch (msg.type) {
    case "reset":
      state = msg.state;
      for (const { el } of rendered.values()) el.remove();
      rendered.clear();
      renderedPlan = undefined;
      renderedModes = undefined;
      break;
    case "action":
      state = reduce(state, msg.action);
      break;
    case "context":
      showContext(msg.label);
      return;
    case "focusInput":
      input.focus();
      return;
  }
  schedule();
});

function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(() => {
    scheduled = false;
    render();
  });
}

function render(): void {
  renderItems();
  renderChrome();
  if (stickToBottom) log.scrollTop = log.scrollHeight;
}

function renderItems(): void {
  const live = new Set<string>();
  state.items.forEach((item, index) => {
    live.add(item.id);
    let entry = rendered.get(item.id);
    if (!entry) {
      entry = { item, el: document.createElement("div") };
      rendered.set(item.id, entry);
      paint(entry.el, item);
    } else if (entry.item !== item) {
      entry.item = item;
      paint(entry.el, item);
    }
    if (log.children[index] !== entry.el) log.insertBefore(entry.el, log.children[index] ?? null);
  });
  for (const [id, { el }] of rendered) {
    if (!live.has(id)) {
      el.remove();
      rendered.delete(id);
    }
  }
}

function paint(el: HTMLElement, item: ConversationItem): void {
  const wasOpen = el.querySelector("details")?.open ?? false;
  const output = el.querySelector("pre.output");
  const outputAtEnd = !output || output.scrollHeight - output.scrollTop - output.clientHeight < 20;
  el.className = `item ${item.kind}`;
  el.dataset.id = item.id;
  el.innerHTML = itemHtml(item);
  const details = el.querySelector("details");
  if (details && wasOpen) details.open = true;
  const newOutput = el.querySelector("pre.output");
  if (newOutput && outputAtEnd) newOutput.scrollTop = newOutput.scrollHeight;
}

function itemHtml(item: ConversationItem): string {
  switch (item.kind) {
    case "user": {
      const chips = item.attachments.map((a) => `<span class="chip" title="attached">${escapeHtml(a)}</span>`).join("");
      return `<div class="who">You</div><div class="text">${escapeHtml(item.text)}</div>${chips ? `<div class="chips">${chips}</div>` : ""}`;
    }
    case "agent":
      return `<div class="md">${renderMarkdown(item.text)}</div>`;
    case "thought":
      return `<details><summary>Thinking</summary><div class="md">${renderMarkdown(item.text)}</div></details>`;
    case "tool": {
      const output = item.output ? `<pre class="output">${escapeHtml(item.output)}</pre>` : "";
      return `<div class="tool-head"><span class="tool-kind">${escapeHtml(item.toolKind)}</span><span class="tool-title">${renderInline(item.title)}</span><span class="badge ${item.status}">${statusLabel(item.status)}</span></div>${output}${item.diffs.map(diffHtml).join("")}`;
    }
    case "permission":
      if (item.answer !== undefined) return `<span class="answered">${renderInline(item.title)} — ${escapeHtml(item.answer)}</span>`;
      return permissionHtml(item.title, item.options, item.hasDiff);
    case "turnEnd":
      return turnEndHtml(item.stopReason, item.error, item.usage);
    case "notice":
      return escapeHtml(item.text);
  }
}

function permissionHtml(title: string, options: PermissionOption[], hasDiff: boolean): string {
  const buttons = options
    .map((o) => {
      const kind = o.kind.startsWith("allow") ? "allow" : "reject";
      const rule = o._meta?.rule ? `<span class="rule">${escapeHtml(o._meta.rule)}${o._meta.destination ? ` → ${escapeHtml(o._meta.destination)}` : ""}</span>` : "";
      return `<button class="option ${kind} ${o.kind}" data-action="permission" data-option="${escapeHtml(o.optionId)}">${escapeHtml(o.name)}${rule}</button>`;
    })
    .join("");
  const diff = hasDiff ? `<button class="secondary" data-action="openDiff">Show diff</button>` : "";
  return `<div class="perm-title">Allow <strong>${renderInline(title)}</strong>?</div><div class="options">${buttons}${diff}</div><input class="feedback" type="text" placeholder="Optional feedback for the agent (sent with a reject)">`;
}

function turnEndHtml(stopReason: string | undefined, error: string | undefined, usage: TurnUsage | undefined): string {
  const parts: string[] = [];
  if (error) parts.push(`<span class="reason error">Error: ${escapeHtml(error)}</span>`);
  else parts.push(`<span class="reason ${escapeHtml(stopReason ?? "")}">${stopReason === "end_turn" ? "Done" : `Turn ended: ${escapeHtml(stopReason ?? "?")}`}</span>`);
  if (usage && (usage.inputTokens || usage.outputTokens)) {
    parts.push(`${formatTokens(usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens)} in · ${formatTokens(usage.outputTokens)} out`);
  }
  if (usage?.cost !== undefined) parts.push(formatCost(usage.cost, usage.currency));
  if (usage?.contextUsed !== undefined && usage.contextSize) parts.push(`context ${Math.round((100 * usage.contextUsed) / usage.contextSize)}%`);
  return parts.join(" · ");
}

function diffHtml(diff: DiffContent): string {
  const lines = lineDiff(diff.oldText ?? "", diff.newText)
    .map((l) => `<span class="line ${l.op}">${l.op === "add" ? "+" : l.op === "del" ? "-" : " "} ${escapeHtml(l.text)}</span>`)
    .join(""); // block spans: a newline between them would double the spacing inside <pre>
  return `<div class="diff"><div class="diff-path">${escapeHtml(diff.path)}</div><pre>${lines}</pre></div>`;
}

function renderChrome(): void {
  const { connection, phase, modes } = state;
  connectionEl.textContent = connection.status === "ready" ? (phase === "idle" ? "" : phase === "cancelling" ? "stopping…" : "working…") : connection.status;
  connectionEl.className = `connection ${connection.status} ${phase}`;
  banner.hidden = connection.status !== "failed";
  banner.textContent = connection.status === "failed" ? `The bridge could not start: ${connection.message ?? ""}. Run “Agent Bridge: Show Log”.` : "";
  stopButton.disabled = phase === "idle";
  stopButton.textContent = phase === "cancelling" ? "Force stop" : "Stop";
  sendButton.disabled = connection.status !== "ready";
  if (modes !== renderedModes) {
    renderedModes = modes;
    modeSelect.innerHTML = (modes?.availableModes ?? [])
      .map((m) => `<option value="${escapeHtml(m.id)}"${m.id === modes?.currentModeId ? " selected" : ""}>${escapeHtml(m.name)}</option>`)
      .join("");
    modeSelect.disabled = !modes;
  }
  if (state.plan !== renderedPlan) {
    renderedPlan = state.plan;
    planEl.hidden = state.plan.length === 0;
    const icon = { pending: "○", in_progress: "◐", completed: "●" } as const;
    planEl.innerHTML = `<div class="plan-title">Plan</div><ul>${state.plan
      .map((e) => `<li class="${e.status}"><span class="plan-icon">${icon[e.status]}</span>${escapeHtml(e.content)}</li>`)
      .join("")}</ul>`;
  }
}

function showContext(label: string | undefined): void {
  attachLabel.hidden = !label;
  const isSelection = !!label && /:\d+-\d+$/.test(label);
  if (label !== contextName.textContent) attach.checked = isSelection;
  contextName.textContent = label ?? "";
}

function statusLabel(status: string): string {
  return { pending: "pending", in_progress: "running", completed: "done", failed: "failed" }[status] ?? status;
}

function formatTokens(n: number): string {
  return n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(n);
}

function formatCost(amount: number, currency = "USD"): string {
  return currency === "USD" ? `$${amount.toFixed(4)}` : `${amount.toFixed(4)} ${escapeHtml(currency)}`;
}

// --- input --------------------------------------------------------------------------------------------
function submit(): void {
  const text = input.value.trim();
  if (!text || sendButton.disabled) return;
  vscode.postMessage({ type: "submit", text, attachContext: attach.checked && !attachLabel.hidden });
  input.value = "";
  stickToBottom = true;
}

sendButton.addEventListener("click", submit);
stopButton.addEventListener("click", () => vscode.postMessage({ type: "cancel" }));
input.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    submit();
  }
});
// Escape anywhere in the panel cancels the running turn (twice: forces). VS Code may also see the key through
// the `agentBridge.cancel` keybinding; the host ignores a duplicate that arrives within a few milliseconds.
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && !e.isComposing && state.phase !== "idle") vscode.postMessage({ type: "cancel" });
});
modeSelect.addEventListener("change", () => vscode.postMessage({ type: "setMode", modeId: modeSelect.value }));

log.addEventListener("click", (e) => {
  const button = (e.target as HTMLElement).closest<HTMLButtonElement>("button[data-action]");
  const card = button?.closest<HTMLElement>(".item");
  const id = card?.dataset.id;
  if (!button || !id) return;
  if (button.dataset.action === "openDiff") {
    vscode.postMessage({ type: "openDiff", id });
  } else if (button.dataset.action === "permission" && button.dataset.option) {
    const feedback = card.querySelector<HTMLInputElement>("input.feedback")?.value.trim();
    for (const b of card.querySelectorAll("button")) b.disabled = true;
    vscode.postMessage({ type: "permission", id, optionId: button.dataset.option, ...(feedback ? { feedback } : {}) });
  }
});

vscode.postMessage({ type: "ready" });
