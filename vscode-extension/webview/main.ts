/**
 * The conversation panel's script. It keeps a copy of the panel state (the same reducer as the host) and
 * renders at most once per animation frame, re-rendering only the items whose object changed; a streamed
 * message re-renders only its last markdown block (markdownView.ts).
 */
import type { ChangesView, FromWebview, RewindDialog, TabInfo, ToWebview } from "../src/panel/messages";
import type { RewindMode, RewindResolution } from "../src/protocol";
import { changesHtml, rewindHtml } from "./checkpoints";
import { type ConversationItem, initialState, type PanelAction, type PanelState, reduce } from "../src/panel/state";
import { Composer } from "./composer";
import { PathLinks } from "./files";
import { cardOptions, meterText, permissionHtml, statusText, toolHtml, turnEndHtml, userHtml, type ViewContext } from "./items";
import { escapeHtml, setCodeWrap } from "./markdown";
import { MarkdownView } from "./markdownView";
import { renderDelay, streamedUpdates } from "./pacing";

/** What the panel keeps across its webview being hidden and restored (VS Code's webview state). */
interface Kept {
  /** Code blocks scroll long lines sideways instead of wrapping them. */
  codeNoWrap?: boolean;
}
declare function acquireVsCodeApi(): { postMessage(message: FromWebview): void; getState(): Kept | undefined; setState(state: Kept): void };
const vscode = acquireVsCodeApi();
const post = (message: FromWebview): void => vscode.postMessage(message);

function $(id: string): HTMLElement {
  const el = document.getElementById(id);
  if (!el) throw new Error(`missing #${id}`);
  return el;
}
const log = $("log");
// Code blocks wrap long lines unless the person chose otherwise: a block that scrolls sideways is a scroller of its
// own, and a panel full of them makes every keystroke's frame slower while an answer streams (issue 24 item 13).
const kept: Kept = vscode.getState() ?? {};
function showCodeWrap(): void {
  const wraps = !kept.codeNoWrap;
  setCodeWrap(wraps);
  log.classList.toggle("code-nowrap", !wraps);
  for (const button of log.querySelectorAll("button.wrap-code")) button.setAttribute("aria-pressed", String(wraps));
}
showCodeWrap();
const planEl = $("plan");
const modeSelect = $("mode") as HTMLSelectElement;
const modelButton = $("model") as HTMLButtonElement;
const connectionEl = $("connection");
const banner = $("banner");
const welcome = $("welcome");
const jump = $("jump") as HTMLButtonElement;
const toast = $("toast");
const tabsEl = $("tabs");
const modeDesc = $("mode-desc");
const bypass = $("bypass");
const keyBanner = $("key-banner");
const welcomeKey = $("welcome-key");
const welcomeOffline = $("welcome-offline");
/** The session runs on the bridge's offline demo model (its wire id): the welcome says how to use it. */
let onOfflineModel = false;
const trustBanner = $("trust-banner");
const meter = $("meter");
const meterFill = meter.querySelector<HTMLElement>(".meter-fill");
const meterLabel = meter.querySelector<HTMLElement>(".meter-text");
const overlay = $("overlay");

let state: PanelState = initialState();
/** From the host's `sessionState`; until it says, a session exists once `sessionStarted` was seen. */
let sessionReadyFromHost: boolean | undefined;
let needsKey = false;
let tabs: TabInfo[] = [];
/** What was typed in each tab and not sent: a tab shown again gets its draft back. */
const drafts = new Map<string, string>();
const rendered = new Map<string, { item: ConversationItem; el: HTMLElement; md?: MarkdownView }>();
let renderedPlan: PanelState["plan"] | undefined;
let renderedModes: PanelState["modes"] | undefined;
const links = new PathLinks((paths) => post({ type: "checkPaths", paths }), log);
const ctx: ViewContext = { folders: [], paths: links.lookup };

const sessionReady = (): boolean => state.connection.status === "ready" && (sessionReadyFromHost ?? state.sessionId !== undefined);
const composer = new Composer(post, () => sessionReady(), () => (stickToBottom = true), (text) => showToast(text));

// --- auto-scroll: follow the stream until the user scrolls up; resume once back at the bottom ---------
// A resize (the sidebar narrowed or widened) reflows the whole log under the view, and a part of the answer that
// was off-screen takes its real height once laid out (content-visibility's placeholder, 40em, is rarely right:
// a fast stream or a replayed history appends more than a screen at once): the scroll either causes (the
// browser's scroll anchoring) is not the person's, so a view that follows the stream is put back at the bottom
// rather than let go. A scroll by the person (wheel, touch, keys, the scrollbar) lets go as always.
let stickToBottom = true;
let resizedAt = -Infinity;
/** The log's height at the last scroll event: a scroll that comes with a new height was the layout's. */
let heightAtScroll = 0;
let userScrolledAt = -Infinity;
let pointerHeld = false;
const RESIZE_SETTLES_MS = 300;
const byUser = (): boolean => pointerHeld || performance.now() - userScrolledAt < RESIZE_SETTLES_MS;
for (const type of ["wheel", "touchmove", "keydown"]) {
  log.addEventListener(type, () => (userScrolledAt = performance.now()), { passive: true });
}
log.addEventListener("pointerdown", () => (pointerHeld = true));
window.addEventListener("pointerup", () => ((pointerHeld = false), (userScrolledAt = performance.now())));
window.addEventListener("pointercancel", () => (pointerHeld = false));
new ResizeObserver(() => {
  resizedAt = performance.now();
  if (stickToBottom) log.scrollTop = log.scrollHeight;
}).observe(log);
log.addEventListener("scroll", () => {
  const atBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
  const grew = log.scrollHeight !== heightAtScroll;
  heightAtScroll = log.scrollHeight;
  if (!atBottom && stickToBottom && !byUser() && (grew || performance.now() - resizedAt < RESIZE_SETTLES_MS)) {
    log.scrollTop = log.scrollHeight;
    return;
  }
  stickToBottom = atBottom;
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
      urgent = true;
      state = msg.state;
      for (const { el } of rendered.values()) el.remove();
      rendered.clear();
      renderedPlan = undefined;
      renderedModes = undefined;
      break;
    case "action":
      state = reduce(state, msg.action);
      if (!streamed(msg.action)) urgent = true;
      break;
    case "actions":
      for (const action of msg.actions) state = reduce(state, action);
      if (!msg.actions.every(streamed)) urgent = true;
      break;
    case "context":
      composer.showContext(msg.label, msg.problems);
      return;
    case "focusInput":
      composer.focus();
      return;
    case "model":
      onOfflineModel = msg.modelId === "offline-demo";
      showWelcomeParts();
      modelButton.hidden = !msg.model;
      modelButton.textContent = msg.model ?? "";
      modelButton.title = `The model this session runs${msg.modelId && msg.modelId !== msg.model ? ` (${msg.modelId})` : ""}: click to choose another`;
      return;
    case "sessionState":
      urgent = true;
      sessionReadyFromHost = msg.ready;
      needsKey = msg.needsKey ?? false;
      break;
    case "tabs":
      showTabs(msg.tabs);
      return;
    case "trust":
      trustBanner.hidden = msg.trust !== "restricted";
      return;
    case "workspace":
      ctx.folders = msg.folders;
      return;
    case "files":
      composer.showFiles(msg.requestId, msg.files);
      return;
    case "paths":
      links.answer(msg.status);
      return;
    case "fileNotFound":
      showToast(`Not found: ${msg.path}`);
      return;
    case "toast":
      showToast(msg.text);
      return;
    case "draft":
      composer.draft = msg.text;
      composer.focus();
      return;
    case "rewind":
      showDialog(msg.dialog ? { kind: "rewind", dialog: msg.dialog } : undefined);
      return;
    case "changes":
      showDialog(msg.view ? { kind: "changes", view: msg.view } : undefined);
      return;
  }
  schedule();
});

// --- the rewind dialog and the Changes view (issue 23): one overlay over the conversation ---------------
type Dialog = { kind: "rewind"; dialog: RewindDialog } | { kind: "changes"; view: ChangesView };
let dialog: Dialog | undefined;

function showDialog(next: Dialog | undefined): void {
  dialog = next;
  overlay.hidden = !next;
  if (!next) return;
  overlay.className = `overlay ${next.kind}`;
  overlay.innerHTML = next.kind === "rewind" ? rewindHtml(next.dialog) : changesHtml(next.view, ctx.folders);
}

function closeDialog(): void {
  dialog = undefined;
  overlay.hidden = true;
  overlay.innerHTML = "";
}

overlay.addEventListener("change", (e) => {
  const radio = (e.target as HTMLElement).closest<HTMLInputElement>("input[name='rewind-mode']");
  if (radio && dialog?.kind === "rewind") post({ type: "rewindPreview", turnId: dialog.dialog.turnId, text: dialog.dialog.text, mode: radio.value as RewindMode });
});

overlay.addEventListener("click", (e) => {
  const target = e.target as HTMLElement;
  const button = target.closest<HTMLButtonElement>("button");
  if (!button || button.disabled) return;
  if (button.dataset.dialog === "close") return closeDialog();
  if (button.dataset.dialog === "rewind-confirm" && dialog?.kind === "rewind") {
    const resolutions: Record<string, RewindResolution> = {};
    for (const select of overlay.querySelectorAll<HTMLSelectElement>("select.resolution")) if (select.dataset.path) resolutions[select.dataset.path] = select.value as RewindResolution;
    for (const b of overlay.querySelectorAll("button")) b.disabled = true;
    const { turnId, text, mode } = dialog.dialog;
    post({ type: "rewindConfirm", turnId, text, mode, resolutions });
    return;
  }
  const turnId = dialog?.kind === "changes" ? dialog.view.turnId : undefined;
  const scope = turnId ? { turnId } : {};
  if (button.dataset.open) return post({ type: "openChange", path: button.dataset.open, ...scope });
  const action = button.dataset.review;
  if (action === "keep" || action === "undo") {
    const hunk = button.dataset.hunk !== undefined ? Number(button.dataset.hunk) : undefined;
    for (const b of overlay.querySelectorAll("button[data-review]")) (b as HTMLButtonElement).disabled = true;
    post({
      type: "review",
      action,
      ...scope,
      ...(button.dataset.path ? { path: button.dataset.path } : {}),
      ...(hunk !== undefined ? { hunk } : {}),
      ...(button.dataset.hunkId ? { hunkId: button.dataset.hunkId } : {}),
    });
  }
});

$("changes").addEventListener("click", () => post({ type: "showChanges" }));

/**
 * Typing comes first: the frame after a keystroke paints the character and nothing else, and while the person
 * types the stream's text renders a few times a second, in a pause between keys; any other change renders right
 * after the key's frame (pacing.ts says when, and why).
 */
let inputAt = Number.NEGATIVE_INFINITY;
let renderedAt = Number.NEGATIVE_INFINITY;
/** A change waits to be rendered that is not only the stream's text. */
let urgent = false;
let timer: ReturnType<typeof setTimeout> | undefined;
let frameAsked = false;
for (const type of ["keydown", "input", "compositionupdate"]) document.addEventListener(type, () => (inputAt = performance.now()), true);

const streamed = (action: PanelAction): boolean => action.type === "update" && streamedUpdates.has(action.update.sessionUpdate);

/** Asks for a render; a change that came while the render waited may make it due sooner (an urgent one). */
function schedule(): void {
  if (frameAsked) return;
  if (timer) clearTimeout(timer);
  later();
}

/** A frame for the render when it is due: while the person types, not even a frame is asked for before that. */
function later(): void {
  timer = undefined;
  const wait = renderDelay(performance.now(), inputAt, renderedAt, urgent);
  if (wait > 0) {
    timer = setTimeout(later, wait);
  } else {
    frameAsked = true;
    requestAnimationFrame(frame);
  }
}

function frame(): void {
  frameAsked = false;
  // A key pressed after the frame was asked for: its frame paints the character only.
  if (renderDelay(performance.now(), inputAt, renderedAt, urgent) > 0) return later();
  urgent = false;
  renderedAt = performance.now();
  render();
}

function render(): void {
  const before = pendingCardTops();
  renderItems();
  renderChrome();
  if (stickToBottom) log.scrollTop = log.scrollHeight;
  // A card the render moved (something came below it and the log followed, a card above it grew) answers only a
  // moment later again: the click meant for what was under the pointer before must not land on it (round 16).
  for (const [el, top] of before) if (el.isConnected && Math.abs(el.getBoundingClientRect().top - top) > 2) arm(el);
}

function pendingCardTops(): Map<HTMLElement, number> {
  const tops = new Map<HTMLElement, number>();
  for (const el of log.querySelectorAll<HTMLElement>(".item.permission.pending")) tops.set(el, el.getBoundingClientRect().top);
  return tops;
}

function renderItems(): void {
  const live = new Set<string>();
  let newCard: HTMLElement | undefined;
  state.items.forEach((item, index) => {
    live.add(item.id);
    let entry = rendered.get(item.id);
    if (!entry) {
      entry = { item, el: document.createElement("div") };
      rendered.set(item.id, entry);
      if (item.kind === "permission" && item.answer === undefined) arm(entry.el);
      paint(entry, item);
      if (item.kind === "permission" && item.answer === undefined) newCard = entry.el;
    } else if (entry.item !== item) {
      entry.item = item;
      paint(entry, item);
    }
    if (log.children[index] !== entry.el) log.insertBefore(entry.el, log.children[index] ?? null);
  });
  for (const [id, { el }] of rendered) {
    if (!live.has(id)) {
      el.remove();
      rendered.delete(id);
    }
  }
  // A new card takes the keyboard unless the person is writing (text in the input, or typing a moment ago).
  const active = document.activeElement;
  const writing = (active instanceof HTMLTextAreaElement && composer.typing(performance.now())) || (active instanceof HTMLInputElement && active.type === "text");
  if (newCard && !writing) newCard.focus({ preventScroll: true });
}

/**
 * A question's answers wait a moment after it first shows: a click meant for what was under the pointer before
 * the log moved up by the card's height, or a key pressed as it came, answers nothing (attack on the panel,
 * round 15). Escape and the feedback's Enter reject at once: rejecting needs no wait.
 */
const CARD_ARMING_MS = 400;

const arming = new WeakMap<HTMLElement, ReturnType<typeof setTimeout>>();

function arm(el: HTMLElement): void {
  if (el.dataset.answered !== undefined) return;
  el.dataset.arming = "";
  for (const b of answerButtons(el)) b.disabled = true;
  clearTimeout(arming.get(el));
  arming.set(
    el,
    setTimeout(() => {
      delete el.dataset.arming;
      if (el.dataset.answered === undefined) for (const b of answerButtons(el)) b.disabled = false;
    }, CARD_ARMING_MS),
  );
}

function answerButtons(el: HTMLElement): NodeListOf<HTMLButtonElement> {
  return el.querySelectorAll<HTMLButtonElement>("button[data-action='permission']");
}

function paint(entry: { item: ConversationItem; el: HTMLElement; md?: MarkdownView }, item: ConversationItem): void {
  const el = entry.el;
  if (item.kind === "agent" || item.kind === "thought") {
    if (!entry.md) {
      el.className = `item ${item.kind}`;
      el.dataset.id = item.id;
      el.innerHTML = item.kind === "thought" ? `<details><summary>Thinking</summary><div class="md"></div></details>` : `<div class="md"></div>`;
      const mdEl = el.querySelector<HTMLElement>(".md");
      if (mdEl) entry.md = new MarkdownView(mdEl, links.lookup, (f) => links.scan(f));
    }
    entry.md?.set(item.text);
    return;
  }
  const output = el.querySelector("pre.output");
  const outputAtEnd = !output || output.scrollHeight - output.scrollTop - output.clientHeight < 20;
  const feedback = el.querySelector<HTMLInputElement>("input.feedback");
  const hadFocus = el.contains(document.activeElement);
  el.className = `item ${item.kind}${item.kind === "permission" && item.answer === undefined ? " pending" : ""}${item.kind === "permission" && item.destructive ? " destructive" : ""}`;
  el.dataset.id = item.id;
  if (item.kind === "permission" && item.answer === undefined) el.tabIndex = 0;
  else el.removeAttribute("tabindex");
  // A sub-agent's work the user opened stays open while it streams in.
  const open = new Set([...el.querySelectorAll<HTMLDetailsElement>("details[data-open-key]")].filter((d) => d.open).map((d) => d.dataset.openKey));
  el.innerHTML = itemHtml(item);
  if (el.dataset.arming !== undefined) for (const b of answerButtons(el)) b.disabled = true;
  for (const d of el.querySelectorAll<HTMLDetailsElement>("details[data-open-key]")) if (open.has(d.dataset.openKey)) d.open = true;
  links.scan(el);
  const newOutput = el.querySelector("pre.output");
  if (newOutput && outputAtEnd) newOutput.scrollTop = newOutput.scrollHeight;
  const newFeedback = el.querySelector<HTMLInputElement>("input.feedback");
  if (feedback && newFeedback) newFeedback.value = feedback.value;
  if (hadFocus && !el.contains(document.activeElement)) el.focus({ preventScroll: true });
}

/** The tab strip (hidden while there is one conversation); a tab shown again gets its draft back. */
function showTabs(next: TabInfo[]): void {
  const before = tabs.find((t) => t.active)?.id;
  const after = next.find((t) => t.active)?.id;
  if (before && after && before !== after) {
    drafts.set(before, composer.draft);
    composer.draft = drafts.get(after) ?? "";
  }
  tabs = next;
  tabsEl.hidden = next.length < 2;
  tabsEl.innerHTML =
    next
      .map((t) => {
        const state = t.waiting ? `<span class="tab-state waiting" title="A question waits for your answer">?</span>` : t.phase !== "idle" ? `<span class="tab-state running" title="A turn runs">●</span>` : "";
        return `<span class="tab${t.active ? " active" : ""}" role="tab" aria-selected="${t.active}"><button type="button" class="tab-title" data-tab="${escapeHtml(t.id)}" title="${escapeHtml(t.title)}">${state}${escapeHtml(t.title)}</button><button type="button" class="tab-close" data-close="${escapeHtml(t.id)}" title="Close this conversation (a running turn is cancelled)" aria-label="Close ${escapeHtml(t.title)}">×</button></span>`;
      })
      .join("") + `<button type="button" class="tab-new" data-new="1" title="New conversation (the others go on)" aria-label="New conversation">+</button>`;
}

tabsEl.addEventListener("click", (e) => {
  const target = e.target as HTMLElement;
  const close = target.closest<HTMLElement>("[data-close]")?.dataset.close;
  if (close) return post({ type: "closeSession", id: close });
  const tab = target.closest<HTMLElement>("[data-tab]")?.dataset.tab;
  if (tab) return post({ type: "switchSession", id: tab });
  if (target.closest("[data-new]")) post({ type: "newSession" });
});

function itemHtml(item: ConversationItem): string {
  switch (item.kind) {
    case "user":
      return userHtml(item);
    case "agent":
    case "thought":
      return "";
    case "tool":
      return toolHtml(item, ctx);
    case "permission":
      return permissionHtml(item, ctx);
    case "turnEnd":
      return turnEndHtml(item.stopReason, item.error, item.usage, item.interrupted, item.needsKey);
    case "notice":
      return escapeHtml(item.text);
  }
}

let ticking: ReturnType<typeof setInterval> | undefined;

function renderChrome(): void {
  const { connection, phase, modes } = state;
  composer.setCommands(state.commands);
  const ready = sessionReady();
  const status = statusText(state, ready, Date.now());
  setText(connectionEl, status);
  if (connectionEl.title !== status) connectionEl.title = status;
  setClass(connectionEl, `connection ${connection.status} ${phase}${state.progress ? " progress" : ""}`);
  // A retry's countdown ticks while it lasts.
  if (state.progress && !ticking) ticking = setInterval(schedule, 1000);
  if (!state.progress && ticking) {
    clearInterval(ticking);
    ticking = undefined;
  }
  setHidden(banner, connection.status !== "failed");
  setText(banner, connection.status === "failed" ? `The bridge could not start: ${connection.message ?? ""}. Run “Agent Bridge: Show Log”.` : "");
  setHidden(welcome, state.items.length > 0);
  // Without a key the way to one stays in view (the welcome goes with the first message).
  setHidden(keyBanner, !needsKey || !welcome.hidden);
  showWelcomeParts();
  composer.setState(phase, ready);
  if (modes !== renderedModes) {
    renderedModes = modes;
    modeSelect.innerHTML = (modes?.availableModes ?? [])
      .map((m) => `<option value="${escapeHtml(m.id)}"${m.id === modes?.currentModeId ? " selected" : ""}${m.description ? ` title="${escapeHtml(m.description)}"` : ""}>${escapeHtml(m.name)}</option>`)
      .join("");
    modeSelect.disabled = !modes;
    const current = modes?.availableModes.find((m) => m.id === modes.currentModeId);
    modeSelect.title = current?.description ? `${current.name}: ${current.description}` : "Permission mode";
    // Bypass is never quiet: a banner says it while it is on.
    bypass.hidden = modes?.currentModeId !== "bypassPermissions";
    modeDesc.hidden = !current?.description || !bypass.hidden;
    modeDesc.textContent = current?.description ? `${current.name}: ${current.description}` : "";
    modeDesc.title = modeDesc.textContent;
  }
  const gauge = meterText(state);
  setHidden(meter, !gauge);
  if (gauge && meterFill && meterLabel) {
    setText(meterLabel, gauge.text);
    if (meter.title !== gauge.title) meter.title = gauge.title;
    if (meterFill.style.width !== `${gauge.percent}%`) meterFill.style.width = `${gauge.percent}%`;
    meter.classList.toggle("high", gauge.percent >= 80);
  }
  if (state.plan !== renderedPlan) {
    renderedPlan = state.plan;
    planEl.hidden = state.plan.length === 0;
    const icon = { pending: "○", in_progress: "◐", completed: "●" } as const;
    const done = state.plan.filter((e) => e.status === "completed").length;
    planEl.innerHTML = `<div class="plan-title">Plan <span class="plan-count">${done}/${state.plan.length}</span></div><ul>${state.plan
      .map((e) => `<li class="${e.status}"><span class="plan-icon">${icon[e.status]}</span>${escapeHtml(e.content)}</li>`)
      .join("")}</ul>`;
  }
}

// The chrome is rendered with each frame of a stream: a write that changes nothing is skipped (it would still
// make the browser lay the header out again).
function setText(el: HTMLElement, text: string): void {
  if (el.textContent !== text) el.textContent = text;
}
function setClass(el: HTMLElement, cls: string): void {
  if (el.className !== cls) el.className = cls;
}
/** The welcome's last part: the key and offline buttons without a key, how to use the demo model on it, else none. */
function showWelcomeParts(): void {
  setHidden(welcomeOffline, !onOfflineModel);
  setHidden(welcomeKey, !needsKey || onOfflineModel);
}

function setHidden(el: HTMLElement, hidden: boolean): void {
  if (el.hidden !== hidden) el.hidden = hidden;
}

let toastTimer: ReturnType<typeof setTimeout> | undefined;
function showToast(text: string): void {
  toast.textContent = text;
  toast.hidden = false;
  if (toastTimer) clearTimeout(toastTimer);
  toastTimer = setTimeout(() => (toast.hidden = true), 4000);
}

// --- permission cards: digits answer the newest pending card, Escape rejects it ------------------------
function newestPendingCard(): HTMLElement | undefined {
  const cards = log.querySelectorAll<HTMLElement>(".item.permission.pending");
  return cards[cards.length - 1];
}

function answerCard(card: HTMLElement, optionId: string): void {
  const id = card.dataset.id;
  if (!id) return;
  const feedback = card.querySelector<HTMLInputElement>("input.feedback")?.value.trim();
  card.dataset.answered = "";
  for (const b of card.querySelectorAll("button")) b.disabled = true;
  post({ type: "permission", id, optionId, ...(feedback ? { feedback } : {}) });
}

function rejectOption(card: HTMLElement): string | undefined {
  const item = rendered.get(card.dataset.id ?? "")?.item;
  if (item?.kind !== "permission") return undefined;
  return cardOptions(item).find((o) => o.option.kind === "reject_once")?.option.optionId;
}

document.addEventListener("keydown", (e) => {
  if (e.isComposing || e.defaultPrevented) return;
  if (e.key === "Escape" && !overlay.hidden) {
    e.preventDefault();
    e.stopPropagation();
    return closeDialog();
  }
  const card = newestPendingCard();
  if (card) {
    const active = document.activeElement;
    const inFeedback = active instanceof HTMLInputElement && active.classList.contains("feedback");
    // The question takes the keyboard unless the person is writing something (text in the input, or a key a
    // moment ago): its digits then answer it, not type into the prompt.
    const inInput = active instanceof HTMLTextAreaElement;
    const typing = (inInput && composer.typing(performance.now())) || active instanceof HTMLSelectElement || (active instanceof HTMLInputElement && active.type === "text");
    // Escape rejects the waiting card (not the turn: VS Code's own Escape binding must not see it either).
    if (e.key === "Escape" && !(inInput && typing)) {
      const target = inFeedback ? (active.closest<HTMLElement>(".item.permission.pending") ?? card) : card;
      const reject = rejectOption(target);
      if (reject) {
        e.preventDefault();
        e.stopPropagation();
        answerCard(target, reject);
        return;
      }
    }
    if (inFeedback && e.key === "Enter") {
      const target = active.closest<HTMLElement>(".item.permission.pending");
      const reject = target && rejectOption(target);
      if (target && reject) {
        e.preventDefault();
        answerCard(target, reject);
      }
      return;
    }
    const focusedCard = active instanceof HTMLElement ? active.closest<HTMLElement>(".item.permission.pending") : null;
    if (/^[1-9]$/.test(e.key) && !e.ctrlKey && !e.metaKey && !e.altKey && !typing) {
      const target = focusedCard ?? card;
      const button = target.querySelector<HTMLButtonElement>(`button[data-key="${e.key}"]`);
      if (button && !button.disabled) {
        e.preventDefault();
        e.stopPropagation();
        answerCard(target, button.dataset.option ?? "");
      }
      return;
    }
  }
  // Escape anywhere in the panel cancels the running turn (twice: forces). VS Code may also see the key through
  // the `agentBridge.cancel` keybinding; the host ignores a duplicate that arrives within a few milliseconds.
  if (e.key === "Escape" && state.phase !== "idle") post({ type: "cancel" });
});

modeSelect.addEventListener("change", () => post({ type: "setMode", modeId: modeSelect.value }));
modelButton.addEventListener("click", () => post({ type: "command", command: "agentBridge.selectModel" }));
$("compact").addEventListener("click", () => post({ type: "compact" }));
bypass.addEventListener("click", (e) => {
  const mode = (e.target as HTMLElement).closest<HTMLButtonElement>("button[data-mode]")?.dataset.mode;
  if (mode) post({ type: "setMode", modeId: mode });
});
// Command buttons anywhere (the welcome, the banners, a turn that failed for want of a key).
document.addEventListener("click", (e) => {
  const button = (e.target as HTMLElement).closest<HTMLButtonElement>("button[data-command]");
  if (button?.dataset.command) post({ type: "command", command: button.dataset.command });
});

log.addEventListener("click", (e) => {
  const target = e.target as HTMLElement;
  const link = target.closest<HTMLAnchorElement>("a.file-link");
  if (link?.dataset.path) {
    e.preventDefault();
    const line = Number(link.dataset.line);
    post({ type: "openFile", path: link.dataset.path, ...(line > 0 ? { line } : {}) });
    return;
  }
  const wrap = target.closest<HTMLButtonElement>("button.wrap-code");
  if (wrap) {
    // Every block above changes height: the one clicked stays where it was on the screen.
    const before = wrap.getBoundingClientRect().top;
    kept.codeNoWrap = !kept.codeNoWrap;
    vscode.setState(kept);
    showCodeWrap();
    log.scrollTop += wrap.getBoundingClientRect().top - before;
    return;
  }
  const copy = target.closest<HTMLButtonElement>("button.copy-code");
  if (copy) {
    const code = copy.closest(".code-block")?.querySelector("pre code");
    post({ type: "copy", text: code?.textContent ?? "" });
    copy.textContent = "Copied";
    copy.classList.add("copied");
    setTimeout(() => {
      copy.textContent = "Copy";
      copy.classList.remove("copied");
    }, 1500);
    return;
  }
  const user = target.closest<HTMLButtonElement>("button[data-user]");
  const turn = user?.closest<HTMLElement>(".user-actions")?.dataset.turn;
  if (user && turn) {
    const item = rendered.get(user.closest<HTMLElement>(".item")?.dataset.id ?? "")?.item;
    const text = item?.kind === "user" ? item.text : "";
    if (user.dataset.user === "rewind") post({ type: "rewindPreview", turnId: turn, text, mode: "both" });
    else if (user.dataset.user === "changes") post({ type: "showChanges", turnId: turn, title: `“${text.split("\n")[0]?.slice(0, 60) ?? ""}”` });
    else if (user.dataset.user === "fork") post({ type: "fork", turnId: turn, text });
    return;
  }
  const stop = target.closest<HTMLButtonElement>("button[data-action='cancelToolCall']");
  if (stop?.dataset.toolCall) {
    stop.disabled = true;
    post({ type: "cancelToolCall", toolCallId: stop.dataset.toolCall });
    return;
  }
  const button = target.closest<HTMLButtonElement>("button[data-action]");
  const card = button?.closest<HTMLElement>(".item");
  const id = card?.dataset.id;
  if (!button || !card || !id) return;
  if (button.dataset.action === "openDiff") {
    post({ type: "openDiff", id });
  } else if (button.dataset.action === "permission" && button.dataset.option) {
    answerCard(card, button.dataset.option);
  }
});

schedule();
post({ type: "ready" });
