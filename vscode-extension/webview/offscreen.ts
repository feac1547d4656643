/**
 * A long answer's far off-screen parts keep their HTML, not their DOM (issue 24 item 13).
 *
 * `content-visibility: auto` already spares the browser laying out and painting an off-screen `div.md-group`,
 * but its nodes stay alive: a 6,000-line answer is tens of thousands of elements and text nodes, and every major
 * garbage collection of the renderer marks them all — the pauses a person typing while the answer streams feels
 * as a late character. A sealed group (one the stream no longer appends to) more than a few screens away is kept
 * as its HTML string and its height (so nothing moves), and put back before it comes near the view.
 *
 * Not taken out: a group holding the selection or the focus, or one that is not laid out (a closed Thinking
 * block, a hidden tab), whose height would be 0.
 */

/** How far from the view a group goes: three screens above and below stay whole. */
const margin = "300% 0px";

export class Offscreen {
  private readonly observer: IntersectionObserver;
  private readonly saved = new WeakMap<HTMLElement, string>();
  /** Far groups left in for the selection or the focus: looked at again once either moves. */
  private readonly held = new Set<HTMLElement>();
  private lookAgain = 0;

  constructor(
    private readonly root: HTMLElement,
    /** A group put back: what the page knows now that its HTML did not (file links found since, the Wrap choice). */
    private readonly restored: (el: HTMLElement) => void,
  ) {
    this.observer = new IntersectionObserver((entries) => this.seen(entries), { root, rootMargin: margin });
    const later = (): void => {
      if (this.held.size && !this.lookAgain) this.lookAgain = requestAnimationFrame(() => this.reobserve());
    };
    document.addEventListener("selectionchange", later);
    document.addEventListener("focusout", later);
  }

  /** A group the stream will not append to again: it may go when it is far off-screen. */
  seal(group: HTMLElement): void {
    this.observer.observe(group);
  }

  /** Whether the group is kept as HTML now. */
  isOut(group: HTMLElement): boolean {
    return this.saved.has(group);
  }

  /**
   * Every group back in the DOM (before a change of every block's height, such as the Wrap choice); the far
   * ones go again at the observer's next look.
   */
  restoreAll(): void {
    const out = [...this.root.querySelectorAll<HTMLElement>(".md-group.offscreen")];
    for (const el of out) this.restore(el);
    this.reobserve(out);
  }

  /** The observer reports changes only: a fresh observation reports where each group is now. */
  private reobserve(groups: Iterable<HTMLElement> = this.held): void {
    this.lookAgain = 0;
    for (const el of [...groups]) {
      this.held.delete(el);
      this.observer.unobserve(el);
      if (el.isConnected) this.observer.observe(el);
    }
  }

  private seen(entries: IntersectionObserverEntry[]): void {
    for (const entry of entries) {
      const el = entry.target as HTMLElement;
      this.held.delete(el);
      if (!el.isConnected) this.observer.unobserve(el);
      else if (entry.isIntersecting) this.restore(el);
      else this.takeOut(el);
    }
  }

  private takeOut(el: HTMLElement): void {
    if (this.saved.has(el)) return;
    const selection = document.getSelection();
    if (el.contains(document.activeElement) || (selection && selection.rangeCount > 0 && selection.containsNode(el, true))) {
      this.held.add(el);
      return;
    }
    const height = el.getBoundingClientRect().height;
    if (!height) return;
    this.saved.set(el, el.innerHTML);
    // The CSP refuses style attributes in markup, not the CSSOM.
    el.style.height = `${height}px`;
    el.classList.add("offscreen");
    el.textContent = "";
  }

  private restore(el: HTMLElement): void {
    const html = this.saved.get(el);
    if (html === undefined) return;
    this.saved.delete(el);
    el.innerHTML = html;
    el.classList.remove("offscreen");
    el.style.removeProperty("height");
    this.restored(el);
  }
}
