/**
 * The input: Send/Stop, the context checkboxes, @-mention completion (type `@` and a few letters: the host
 * lists matching workspace files; ↑/↓ choose, Enter or Tab inserts `@path`, Escape closes the list), slash-command
 * completion (a `/` at the start: every command the session offers — built-ins, custom commands, skills, MCP
 * prompts — with its description and what it takes), and images pasted or dropped into it (a thumbnail each, ×
 * removes one; they go with the next prompt).
 */
import type { FileChoice, FromWebview } from "../src/panel/messages";
import type { AvailableCommand, ImageContent } from "../src/protocol";
import type { TurnPhase } from "../src/session";

/** The image types the model takes (the bridge refuses others). */
export const imageTypes = ["image/png", "image/jpeg", "image/gif", "image/webp"];
/** The Messages API's limit per image is 5 MB of base64; a bigger one is refused here, with a word. */
export const maxImageBytes = 3_750_000;

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

/** The `/name` being typed at the very start of the input, the caret still in it. */
export function commandAt(text: string, caret: number): { query: string } | undefined {
  const m = /^\/([^\s/]*)$/.exec(text.slice(0, caret));
  return m ? { query: m[1] ?? "" } : undefined;
}

/** The commands for `query`: those whose name starts with it first, then those that contain it (at most `max`). */
export function commandMatches(commands: AvailableCommand[], query: string, max = 30): AvailableCommand[] {
  const q = query.toLowerCase();
  const starts = commands.filter((c) => c.name.toLowerCase().startsWith(q));
  const within = commands.filter((c) => !c.name.toLowerCase().startsWith(q) && c.name.toLowerCase().includes(q));
  return [...starts, ...within].slice(0, max);
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
  private readonly imagesEl = $("images");
  private readonly mentions = new Set<string>();
  private images: (ImageContent & { name: string })[] = [];
  /** When the person last typed a key in the input: a question card that appears then does not take the keyboard. */
  lastKeyAt = Number.NEGATIVE_INFINITY;
  private choices: FileChoice[] = [];
  private commands: AvailableCommand[] = [];
  private commandChoices: AvailableCommand[] | undefined; // the list shows commands (else files)
  private selected = 0;
  private requestId = 0;
  private active: { start: number; query: string } | undefined;
  private debounce: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly post: (m: FromWebview) => void,
    private readonly canSend: () => boolean,
    private readonly onSent: () => void,
    private readonly say: (text: string) => void = () => undefined,
  ) {
    this.input.addEventListener("paste", (e) => {
      const files = [...(e.clipboardData?.files ?? [])].filter((f) => f.type.startsWith("image/"));
      if (!files.length) return;
      e.preventDefault();
      void this.addImages(files);
    });
    const composer = this.input.closest("footer") ?? this.input;
    composer.addEventListener("dragover", (e) => {
      if ([...(e.dataTransfer?.items ?? [])].some((i) => i.kind === "file")) e.preventDefault();
    });
    composer.addEventListener("drop", (e) => {
      const files = [...(e.dataTransfer?.files ?? [])].filter((f) => f.type.startsWith("image/"));
      if (!files.length) return;
      e.preventDefault();
      void this.addImages(files);
    });
    this.imagesEl.addEventListener("click", (e) => {
      const remove = (e.target as HTMLElement).closest<HTMLButtonElement>("button[data-image]");
      if (!remove) return;
      this.images.splice(Number(remove.dataset.image), 1);
      this.renderImages();
    });
    this.send.addEventListener("click", () => this.submit());
    this.stop.addEventListener("click", () => post({ type: "cancel" }));
    this.input.addEventListener("keydown", (e) => this.keydown(e));
    this.input.addEventListener("input", () => {
      this.lastKeyAt = performance.now();
      this.detect();
    });
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

  /** The text typed so far (a tab's draft is kept when another tab is shown). */
  get draft(): string {
    return this.input.value;
  }

  set draft(text: string) {
    this.input.value = text;
  }

  /** The session's commands (`available_commands_update`), for `/` completion. */
  setCommands(commands: AvailableCommand[]): void {
    this.commands = commands;
  }

  /** Whether the person is writing: the input has the focus and text, or took a key a moment ago. */
  typing(now: number): boolean {
    return document.activeElement === this.input && (this.input.value.trim() !== "" || now - this.lastKeyAt < 1200);
  }

  /** Reads pasted or dropped images (base64), refusing what the model cannot take. */
  async addImages(files: File[]): Promise<void> {
    for (const file of files) {
      if (!imageTypes.includes(file.type)) {
        this.say(`${file.name || "That image"} is ${file.type}: the model takes PNG, JPEG, GIF and WebP.`);
        continue;
      }
      if (file.size > maxImageBytes) {
        this.say(`${file.name || "That image"} is ${(file.size / 1e6).toFixed(1)} MB: images up to ${(maxImageBytes / 1e6).toFixed(1)} MB go with a prompt.`);
        continue;
      }
      const data = await readBase64(file);
      this.images.push({ type: "image", mimeType: file.type, data, name: file.name || `image ${this.images.length + 1}` });
    }
    this.renderImages();
  }

  private renderImages(): void {
    this.imagesEl.hidden = this.images.length === 0;
    this.imagesEl.textContent = "";
    this.images.forEach((image, index) => {
      const chip = document.createElement("span");
      chip.className = "image-chip";
      const img = document.createElement("img");
      img.src = `data:${image.mimeType};base64,${image.data}`;
      img.alt = image.name;
      const remove = document.createElement("button");
      remove.type = "button";
      remove.className = "secondary";
      remove.dataset.image = String(index);
      remove.title = `Remove ${image.name}`;
      remove.textContent = "×";
      chip.append(img, remove);
      this.imagesEl.append(chip);
    });
  }

  /** Called with every frame of a stream: writes only what changed. */
  setState(phase: TurnPhase, ready: boolean): void {
    const stop = phase === "cancelling" ? "Force stop" : "Stop";
    if (this.stop.disabled !== (phase === "idle")) this.stop.disabled = phase === "idle";
    if (this.stop.textContent !== stop) this.stop.textContent = stop;
    if (this.send.disabled !== !ready) this.send.disabled = !ready;
    const title = ready ? "Send (while a turn runs: interrupt it with this message)" : "Waiting for the session to start";
    if (this.send.title !== title) this.send.title = title;
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
    const images = this.images.map(({ type, mimeType, data }) => ({ type, mimeType, data }));
    const text = this.input.value.trim() || (images.length ? "What do you see in this image?" : "");
    // Nothing is lost: without a session the text stays in the input (Send is disabled meanwhile). The state
    // decides, not the button: the button is drawn at the next frame, and a key pressed before that counts.
    if (!text || !this.canSend()) return;
    const mentions = mentionsIn(text, this.mentions);
    const attachProblems = this.problems.checked && !this.problemsLabel.hidden;
    this.post({
      type: "submit",
      text,
      attachContext: this.attach.checked && !this.attachLabel.hidden,
      ...(mentions.length ? { mentions } : {}),
      ...(attachProblems ? { attachProblems } : {}),
      ...(images.length ? { images } : {}),
    });
    this.input.value = "";
    // Sent: the person is not writing any more (a question that comes next takes the keyboard).
    this.lastKeyAt = Number.NEGATIVE_INFINITY;
    this.images = [];
    this.renderImages();
    this.mentions.clear();
    this.problems.checked = false;
    this.close();
    this.onSent();
  }

  private keydown(e: KeyboardEvent): void {
    if (e.isComposing) return;
    const shown = this.commandChoices ?? this.choices;
    if (!this.list.hidden && shown.length) {
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        e.preventDefault();
        const n = shown.length;
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
    if (e.key === "Escape" && (this.active || this.commandChoices)) {
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
    const command = commandAt(this.input.value, this.input.selectionStart);
    if (command && this.commands.length) {
      this.active = undefined;
      this.commandChoices = commandMatches(this.commands, command.query);
      this.selected = 0;
      return this.renderList();
    }
    this.commandChoices = undefined;
    const at = mentionAt(this.input.value, this.input.selectionStart);
    if (!at) return this.close();
    this.active = at;
    if (this.debounce) clearTimeout(this.debounce);
    this.debounce = setTimeout(() => this.post({ type: "findFiles", requestId: ++this.requestId, query: at.query }), 60);
  }

  private choose(index: number): void {
    if (this.commandChoices) {
      const command = this.commandChoices[index];
      if (!command) return;
      const rest = this.input.value.replace(/^\/\S*/, "").replace(/^ /, "");
      const insert = `/${command.name} `;
      this.input.value = insert + rest;
      this.input.setSelectionRange(insert.length, insert.length);
      this.close();
      this.input.focus();
      return;
    }
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
    this.commandChoices = undefined;
    this.choices = [];
    this.list.hidden = true;
    this.list.textContent = "";
  }

  private renderCommands(commands: AvailableCommand[]): void {
    if (!commands.length) {
      const li = document.createElement("li");
      li.className = "empty";
      li.textContent = "No command matches";
      this.list.append(li);
      return;
    }
    commands.forEach((c, i) => this.list.append(commandItem(c, i, i === this.selected)));
    this.list.querySelector(".selected")?.scrollIntoView({ block: "nearest" });
  }

  private renderList(): void {
    this.list.textContent = "";
    this.list.hidden = false;
    if (this.commandChoices) return this.renderCommands(this.commandChoices);
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

function commandItem(c: AvailableCommand, index: number, selected: boolean): HTMLLIElement {
  const li = document.createElement("li");
  li.dataset.index = String(index);
  li.setAttribute("role", "option");
  li.className = selected ? "selected command" : "command";
  li.setAttribute("aria-selected", String(selected));
  const name = document.createElement("span");
  name.className = "name";
  name.textContent = `/${c.name}${c.input?.hint ? ` <${c.input.hint}>` : ""}`;
  const about = document.createElement("span");
  about.className = "dir";
  about.textContent = c.description ?? "";
  li.append(name, about);
  return li;
}

function readBase64(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(typeof reader.result === "string" ? reader.result.replace(/^data:[^,]*,/, "") : "");
    reader.onerror = () => reject(reader.error ?? new Error("the image could not be read"));
    reader.readAsDataURL(file);
  });
}
