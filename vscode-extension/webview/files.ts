/**
 * File links in the panel. A path in the markdown renders as `span.file-cand` until the host has said
 * whether it names a file; this asks in batches, remembers the answers (so later renders link directly) and
 * turns the spans already on screen into `a.file-link` (or plain text).
 */
import type { PathStatus } from "./markdown";

export class PathLinks {
  private readonly status = new Map<string, "exists" | "missing">();
  private readonly asked = new Set<string>();
  private queued = new Set<string>();
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly ask: (paths: string[]) => void,
    private readonly root: ParentNode,
  ) {}

  readonly lookup = (path: string): PathStatus => this.status.get(path);

  /** Queues the unknown candidates in `node` (a fragment about to be inserted, or an element). */
  scan(node: ParentNode): void {
    for (const el of node.querySelectorAll<HTMLElement>(".file-cand")) {
      const path = el.dataset.path;
      if (path && !this.status.has(path) && !this.asked.has(path)) this.queued.add(path);
    }
    if (this.queued.size && !this.timer) this.timer = setTimeout(() => this.flush(), 80);
  }

  answer(status: Record<string, "exists" | "missing">): void {
    for (const [path, s] of Object.entries(status)) this.status.set(path, s);
    for (const el of this.root.querySelectorAll<HTMLElement>(".file-cand")) {
      const s = el.dataset.path ? status[el.dataset.path] : undefined;
      if (s === "exists") el.replaceWith(fileLink(el));
      else if (s === "missing") {
        el.removeAttribute("class");
        el.removeAttribute("data-path");
        el.removeAttribute("data-line");
      }
    }
  }

  private flush(): void {
    this.timer = undefined;
    const paths = [...this.queued].slice(0, 200);
    this.queued = new Set([...this.queued].slice(200));
    for (const p of paths) this.asked.add(p);
    if (paths.length) this.ask(paths);
    if (this.queued.size) this.timer = setTimeout(() => this.flush(), 80);
  }
}

function fileLink(from: HTMLElement): HTMLAnchorElement {
  const a = document.createElement("a");
  a.className = "file-link";
  a.href = "#";
  a.dataset.path = from.dataset.path;
  if (from.dataset.line) a.dataset.line = from.dataset.line;
  a.title = `Open ${from.dataset.path ?? ""}${from.dataset.line ? `:${from.dataset.line}` : ""}`;
  a.append(...from.childNodes);
  return a;
}
