/**
 * The input: Send/Stop, the context checkboxes, and @-mention completion (type `@` and a few letters: the
 * host lists matching workspace files; ↑/↓ choose, Enter or Tab inserts `@path`, Escape closes the list).
 */
import type { FileChoice, FromWebview } from "../src/panel/messages";
import type { TurnPhase } from "../src/session";

function $(id: string): HTMLElement {
  const el = document.getElementById(id);
  if (!el) throw new Error(`missing #${id}`);
  return el;
}

/** The `@query` being typed just before the caret, if any. */
export function mentionAt(text: string, caret: number): { start: number; query: string } | undefined {
  const m = /(?:^|\s)@([^\s@]*)$/.exec(text.slice(0, caret));
  if (!m) return undefined;
  return { start: caret - (m[1] ?? "").length - 1, query: m[1] ?? "" };
}

/** The mentions still present in the text (a mention the user deleted again is not sent). */
export function mentionsIn(text: string, mentions: Iterable<string>): string[] {
  return [...mentions].filter((p) => new RegExp(`(^|\\s)@${p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?=\\s|$)`).test(text));
}

export class Composer {
  private readonly input = $("input") as HTMLTextAreaElement;
  private readonly send = $("send") as HTMLButtonElement;
  private readonly stop = $("stop") as HTMLButtonElement;
  private readonly attach = $("attach") as HTMLInputElement;
  private readonly attachLabel = $("attach-label");
  private readonly contextName = $("context-name");
  private readonly problems = $("problems") as HTMLInputElement;
  private readonly problemsLabel = $("problems-label");
  private readonly problemsCount = $("problems-count");
  private readonly list = $("mentions");
  private readonly mentions = new Set<string>();
  private choices: FileChoice[] = [];
  private selected = 0;
  private requestId = 0;
  private active: { start: number; query: string } | undefined;
  private debounce: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly post: (m: FromWebview) => void,
    private readonly canSend: () => boolean,
    private readonly onSent: () => void,
  ) {
    this.send.addEventListener("click", () => this.submit());
    this.stop.addEventListener("click", () => post({ type: "cancel" }));
    this.input.addEventListener("keydown", (e) => this.keydown(e));
    this.input.addEventListener("input", () => this.detect());
    this.input.addEventListener("click", () => this.detect());
    this.input.addEventListener("blur", () => setTimeout(() => this.close(), 150));
    this.list.addEventListener("mousedown", (e) => {
      const li = (e.target as HTMLElement).closest<HTMLElement>("li[data-index]");
      if (!li) return;
      e.preventDefault(); // keep the focus in the input
      this.choose(Number(li.dataset.index));
    });
  }

  focus(): void {
    this.input.focus();
  }

  setState(phase: TurnPhase, ready: boolean): void {
    this.stop.disabled = phase === "idle";
    this.stop.textContent = phase === "cancelling" ? "Force stop" : "Stop";
    this.send.disabled = !ready;
    this.send.title = ready ? "Send (while a turn runs: interrupt it with this message)" : "Waiting for the session to start";
  }

  showContext(label: string | undefined, problems: number | undefined): void {
    this.attachLabel.hidden = !label;
    const isSelection = !!label && /:\d+-\d+$/.test(label);
    if (label !== this.contextName.textContent) this.attach.checked = isSelection;
    this.contextName.textContent = label ?? "";
    this.problemsLabel.hidden = !label || !problems;
    this.problemsCount.textContent = problems ? `(${problems})` : "";
    if (!problems) this.problems.checked = false;
  }

  showFiles(requestId: number, files: FileChoice[]): void {
    if (requestId !== this.requestId || !this.active) return;
    this.choices = files;
    this.selected = 0;
    this.renderList();
  }

  private submit(): void {
    const text = this.input.value.trim();
    // Nothing is lost: without a session the text stays in the input (Send is disabled meanwhile).
    if (!text || this.send.disabled || !this.canSend()) return;
    const mentions = mentionsIn(text, this.mentions);
    const attachProblems = this.problems.checked && !this.problemsLabel.hidden;
    this.post({
      type: "submit",
      text,
      attachContext: this.attach.checked && !this.attachLabel.hidden,
      ...(mentions.length ? { mentions } : {}),
      ...(attachProblems ? { attachProblems } : {}),
    });
    this.input.value = "";
    this.mentions.clear();
    this.problems.checked = false;
    this.close();
    this.onSent();
  }

  private keydown(e: KeyboardEvent): void {
    if (e.isComposing) return;
    if (!this.list.hidden && this.choices.length) {
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        e.preventDefault();
        const n = this.choices.length;
        this.selected = (this.selected + (e.key === "ArrowDown" ? 1 : n - 1)) % n;
        this.renderList();
        return;
      }
      if (e.key === "Enter" || e.key === "Tab") {
        e.preventDefault();
        this.choose(this.selected);
        return;
      }
    }
    if (e.key === "Escape" && this.active) {
      // Closing the list is all this Escape does (it does not cancel the turn).
      e.preventDefault();
      e.stopPropagation();
      this.close();
      return;
    }
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      this.submit();
    }
  }

  private detect(): void {
    const at = mentionAt(this.input.value, this.input.selectionStart);
    if (!at) return this.close();
    this.active = at;
    if (this.debounce) clearTimeout(this.debounce);
    this.debounce = setTimeout(() => this.post({ type: "findFiles", requestId: ++this.requestId, query: at.query }), 60);
  }

  private choose(index: number): void {
    const choice = this.choices[index];
    const at = this.active;
    if (!choice || !at) return;
    const value = this.input.value;
    const end = at.start + 1 + at.query.length;
    const insert = `@${choice.path} `;
    this.input.value = value.slice(0, at.start) + insert + value.slice(end).replace(/^ /, "");
    const caret = at.start + insert.length;
    this.input.setSelectionRange(caret, caret);
    this.mentions.add(choice.path);
    this.close();
    this.input.focus();
  }

  private close(): void {
    this.active = undefined;
    this.choices = [];
    this.list.hidden = true;
    this.list.textContent = "";
  }

  private renderList(): void {
    this.list.textContent = "";
    this.list.hidden = false;
    if (!this.choices.length) {
      const li = document.createElement("li");
      li.className = "empty";
      li.textContent = this.active?.query ? `No file matches “${this.active.query}”` : "No files";
      this.list.append(li);
      return;
    }
    this.choices.forEach((c, i) => {
      const li = document.createElement("li");
      li.dataset.index = String(i);
      li.setAttribute("role", "option");
      li.className = i === this.selected ? "selected" : "";
      li.setAttribute("aria-selected", String(i === this.selected));
      const slash = c.path.lastIndexOf("/");
      const name = document.createElement("span");
      name.className = "name";
      name.textContent = c.path.slice(slash + 1);
      const dir = document.createElement("span");
      dir.className = "dir";
      dir.textContent = slash > 0 ? c.path.slice(0, slash) : "";
      li.append(name, dir);
      this.list.append(li);
    });
    this.list.querySelector(".selected")?.scrollIntoView({ block: "nearest" });
  }
}
