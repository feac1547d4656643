import { codeShell, highlightCode, type OpenFence, type PathLookup, StreamingMarkdown } from "./markdown";

/** Final blocks go into groups of this many: the browser skips the off-screen groups (content-visibility). */
const blocksPerGroup = 40;
/** A streamed code block is highlighted in segments of this many lines (each segment re-highlighted as it grows). */
const segmentLines = 40;
/** A closed code block shorter than this is rendered again whole (exact highlighting); a longer one is kept as streamed. */
const keepStreamedLines = 300;

/**
 * A message's markdown in the DOM, kept in step with its growing text: the blocks that became final are
 * appended once (in groups, `div.md-group`) and never touched again; only the last block's nodes are
 * replaced on each update — except a code block still open, whose new lines are appended (LiveFence).
 */
export class MarkdownView {
  private readonly stream: StreamingMarkdown;
  private tail: ChildNode[] = [];
  private group: HTMLElement | undefined;
  private live: LiveFence | undefined;

  constructor(
    readonly el: HTMLElement,
    paths: PathLookup,
    private readonly onInsert: (fragment: DocumentFragment) => void,
  ) {
    this.stream = new StreamingMarkdown(paths);
  }

  set(text: string): void {
    const update = this.stream.update(text);
    if (update.reset) {
      this.el.textContent = "";
      this.tail = [];
      this.group = undefined;
      this.live = undefined;
    }
    for (const node of this.tail) node.remove();
    this.tail = [];
    let html = "";
    for (const block of update.stable) {
      const live = this.live;
      if (live && block.start === live.start && block.fence && live.lines(block.fence.code) >= keepStreamedLines) {
        this.appendStable(html);
        html = "";
        // Kept where it is (moving a long block would lay it all out again); later groups go after it.
        live.update(block.fence.code);
        this.live = undefined;
        this.group = undefined;
      } else {
        html += block.html;
      }
    }
    this.appendStable(html);
    if (this.live && this.live.start !== update.fence?.start) {
      this.live.el.remove();
      this.live = undefined;
    }
    if (update.fence) {
      this.live ??= new LiveFence(update.fence);
      this.live.update(update.fence.code);
      if (this.live.el.parentNode !== this.el || this.el.lastChild !== this.live.el) this.el.append(this.live.el);
      return;
    }
    const tail = this.fragment(update.tail);
    this.tail = [...tail.childNodes];
    this.el.append(tail);
  }

  private appendStable(html: string): void {
    if (html) this.groupFor().append(this.fragment(html));
  }

  private groupFor(): HTMLElement {
    if (!this.group || this.group.childElementCount >= blocksPerGroup) {
      this.group = document.createElement("div");
      this.group.className = "md-group";
      // Before a live code block, which stays last.
      this.el.insertBefore(this.group, this.live?.el.parentNode === this.el ? this.live.el : null);
    }
    return this.group;
  }

  private fragment(html: string): DocumentFragment {
    const template = document.createElement("template");
    template.innerHTML = html;
    this.onInsert(template.content);
    return template.content;
  }
}

/** A code block that is still streaming: full segments of lines stay, the last segment and line are redone. */
class LiveFence {
  readonly el: HTMLElement;
  readonly start: number;
  private readonly lang: string;
  private readonly code: HTMLElement;
  private readonly segment: HTMLElement;
  private readonly partial: Text;
  /** Characters of the code in finished segments, and where the current segment starts. */
  private done = 0;
  private text = "";

  constructor(fence: OpenFence) {
    this.start = fence.start;
    this.lang = fence.lang;
    const template = document.createElement("template");
    template.innerHTML = codeShell(fence.lang, "");
    this.el = template.content.firstElementChild as HTMLElement;
    this.code = this.el.querySelector("code") ?? this.el;
    this.segment = document.createElement("span");
    this.partial = document.createTextNode("");
    this.code.append(this.segment, this.partial);
  }

  lines(code: string): number {
    let n = 0;
    for (let i = code.indexOf("\n"); i >= 0; i = code.indexOf("\n", i + 1)) n++;
    return n;
  }

  update(code: string): void {
    // The text only grows (StreamingMarkdown starts over otherwise); a cheap look at the seam makes sure.
    if (code.length < this.done || code.slice(Math.max(0, this.done - 64), this.done) !== this.text.slice(Math.max(0, this.done - 64), this.done)) {
      // Not a continuation (should not happen): start the block over.
      this.code.textContent = "";
      this.done = 0;
      this.code.append(this.segment, this.partial);
    }
    this.text = code;
    const complete = code.lastIndexOf("\n") + 1;
    let from = this.done;
    // Whole segments that filled up are frozen as they are; the current one is highlighted again.
    for (;;) {
      let end = from;
      let n = 0;
      while (n < segmentLines) {
        const nl = code.indexOf("\n", end);
        if (nl < 0 || nl >= complete) break;
        end = nl + 1;
        n++;
      }
      if (n < segmentLines) {
        this.segment.innerHTML = highlightCode(code.slice(from, Math.max(from, complete)), this.lang);
        break;
      }
      const frozen = document.createElement("span");
      frozen.className = "code-seg";
      frozen.innerHTML = highlightCode(code.slice(from, end), this.lang);
      this.code.insertBefore(frozen, this.segment);
      from = end;
      this.done = end;
    }
    this.partial.data = code.slice(Math.max(complete, this.done));
  }
}
