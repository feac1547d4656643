import { type PathLookup, StreamingMarkdown } from "../src/panel/markdown";

/** Final blocks go into groups of this many: the browser skips the off-screen groups (content-visibility). */
const blocksPerGroup = 40;

/**
 * A message's markdown in the DOM, kept in step with its growing text: the blocks that became final are
 * appended once (in groups, `div.md-group`) and never touched again; only the last block's nodes are
 * replaced on each update.
 */
export class MarkdownView {
  private readonly stream: StreamingMarkdown;
  private tail: ChildNode[] = [];
  private group: HTMLElement | undefined;

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
    }
    for (const node of this.tail) node.remove();
    if (update.stable) {
      if (!this.group || this.group.childElementCount >= blocksPerGroup) {
        this.group = document.createElement("div");
        this.group.className = "md-group";
        this.el.append(this.group);
      }
      this.group.append(this.fragment(update.stable));
    }
    const tail = this.fragment(update.tail);
    this.tail = [...tail.childNodes];
    this.el.append(tail);
  }

  private fragment(html: string): DocumentFragment {
    const template = document.createElement("template");
    template.innerHTML = html;
    this.onInsert(template.content);
    return template.content;
  }
}
