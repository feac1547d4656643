/**
 * The agent's markdown: markdown-it (CommonMark + GFM tables, strikethrough) with highlight.js for code.
 * Safe by construction: raw HTML is off (`html: false`, so every tag in the text is escaped), links are kept
 * only for http(s)/mailto targets, images become links, and what the renderer adds is classes only (the
 * webview's CSP allows no inline style or script). Additions: a copy button on every code block
 * (`button.copy-code`), task lists, and file links (`a.file-link` with `data-path`/`data-line`) for paths
 * the host says exist — until it has said, a path is a `span.file-cand` that the webview asks about.
 *
 * Streaming: `StreamingMarkdown` renders a growing text at the cost of its last block, not of the message.
 */
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import c from "highlight.js/lib/languages/c";
import cpp from "highlight.js/lib/languages/cpp";
import csharp from "highlight.js/lib/languages/csharp";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import dockerfile from "highlight.js/lib/languages/dockerfile";
import go from "highlight.js/lib/languages/go";
import ini from "highlight.js/lib/languages/ini";
import java from "highlight.js/lib/languages/java";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import kotlin from "highlight.js/lib/languages/kotlin";
import makefile from "highlight.js/lib/languages/makefile";
import markdown from "highlight.js/lib/languages/markdown";
import php from "highlight.js/lib/languages/php";
import python from "highlight.js/lib/languages/python";
import ruby from "highlight.js/lib/languages/ruby";
import rust from "highlight.js/lib/languages/rust";
import shell from "highlight.js/lib/languages/shell";
import sql from "highlight.js/lib/languages/sql";
import swift from "highlight.js/lib/languages/swift";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";
import markdownIt, { type Env as MdEnv, type MarkdownIt, type RendererRule, type StateCore, type Token } from "markdown-it";

const languages = { bash, c, cpp, csharp, css, diff, dockerfile, go, ini, java, javascript, json, kotlin, makefile, markdown, php, python, ruby, rust, shell, sql, swift, typescript, xml, yaml };
for (const [name, language] of Object.entries(languages)) hljs.registerLanguage(name, language);
hljs.registerAliases(["toml"], { languageName: "ini" });
hljs.registerAliases(["sh", "zsh", "console"], { languageName: "bash" });
hljs.registerAliases(["html", "svg"], { languageName: "xml" });
hljs.registerAliases(["py"], { languageName: "python" });
hljs.registerAliases(["ts", "tsx"], { languageName: "typescript" });
hljs.registerAliases(["js", "jsx", "mjs", "cjs"], { languageName: "javascript" });

/** What the host said about a path: it exists (a link), it does not (plain text), or not asked yet. */
export type PathStatus = "exists" | "missing" | undefined;
export type PathLookup = (path: string) => PathStatus;

/** markdown-it's env: the path lookup, and the references of a message (shared by its blocks). */
interface Env extends MdEnv {
  paths?: PathLookup;
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[ch] ?? ch);
}

// --- file references -------------------------------------------------------------------------------

export interface FileRef {
  path: string;
  line?: number;
}

const segment = String.raw`[\w@+~-][\w.@+~-]*`;
const extension = String.raw`\.[A-Za-z][A-Za-z0-9]{0,9}`;
/** A path with at least one directory or an extension, and optionally `:line[:col]` or `#Lline`. */
const pathPattern = String.raw`(?:~|\.{1,2})?/?(?:${segment}/)*${segment}`;
const lineSuffix = String.raw`(?::(\d+)(?::\d+)?|#L(\d+)(?:-L?\d+)?)?`;
const wholeRef = new RegExp(String.raw`^(${pathPattern})${lineSuffix}$`);
/** In running text only references that carry a directory and an extension, or a line: `src/a.ts`, `a.py:12`. */
const textRef = new RegExp(String.raw`(?<![\w./@:-])((?:~|\.{1,2})?/?(?:${segment}/)*${segment}${extension})${lineSuffix}(?![\w/])`, "g");

/** A code span or link target that names a file (`src/foo.ts`, `foo.py:12`, `./a/b`), else undefined. */
export function parseFileRef(text: string, loose = false): FileRef | undefined {
  const m = wholeRef.exec(text.trim());
  if (!m?.[1]) return undefined;
  const path = m[1];
  const lineText = m[2] ?? m[3];
  const hasDir = path.includes("/");
  const hasExt = new RegExp(`${extension}$`).test(path);
  // `foo` alone is a word, `1.2` a number, `a.b` too often a member access unless a line says otherwise.
  if (!hasDir && !hasExt) return undefined;
  if (!loose && !hasDir && !lineText && /^[a-z_]\w*\.[a-z_]\w*$/i.test(path) && !/\.(md|txt|json|ya?ml|toml|lock|cfg|ini|sh|py|ts|js|tsx|jsx|rs|go|java|c|h|cpp|hpp|cs|rb|php|css|html|sql|kt|swift|lua|mjs|cjs|xml|svg|csv)$/i.test(path)) return undefined;
  if (/^\d+(\.\d+)+$/.test(path) || path.endsWith("/")) return undefined;
  return lineText ? { path, line: Number(lineText) } : { path };
}

function fileOpen(ref: FileRef, env: Env | undefined): string {
  const data = `data-path="${escapeHtml(ref.path)}"${ref.line ? ` data-line="${ref.line}"` : ""}`;
  const status = env?.paths?.(ref.path);
  if (status === "exists") return `<a class="file-link" href="#" ${data} title="Open ${escapeHtml(ref.path)}${ref.line ? `:${ref.line}` : ""}">`;
  if (status === "missing") return "<span>";
  return `<span class="file-cand" ${data}>`;
}

function fileClose(ref: FileRef, env: Env | undefined): string {
  return env?.paths?.(ref.path) === "exists" ? "</a>" : "</span>";
}

// --- the markdown-it instance ----------------------------------------------------------------------

const ours = (env: MdEnv | undefined): Env | undefined => env;

const safeUrl = /^(https?:|mailto:)/i;

function createMarkdown(): MarkdownIt {
  const md = markdownIt({ html: false, linkify: true, breaks: true, typographer: false });
  md.linkify.set({ fuzzyLink: false, fuzzyEmail: false });
  // Keep link tokens for file targets too (markdown-it drops file: by default); the renderer decides.
  md.validateLink = () => true;
  md.core.ruler.push("agent_links", classifyLinks);
  md.core.ruler.push("task_lists", taskLists);
  md.core.ruler.push("file_refs", fileRefsInText);

  const rules = md.renderer.rules;
  rules.fence = (tokens, idx) => codeBlock(tokens[idx]?.content ?? "", (tokens[idx]?.info ?? "").trim().split(/\s+/)[0] ?? "");
  rules.code_block = (tokens, idx) => codeBlock(tokens[idx]?.content ?? "", "");
  rules.code_inline = codeInline;
  rules.link_open = (tokens, idx, options, mdEnv, self) => {
    const token = tokens[idx];
    const meta = token?.meta as LinkMeta | undefined;
    if (!token || !meta || meta.kind === "drop") return "";
    if (meta.kind === "file") return fileOpen(meta.ref, ours(mdEnv));
    token.attrSet("title", String(token.attrGet("href") ?? ""));
    return self.renderToken(tokens, idx, options);
  };
  rules.link_close = (tokens, idx, options, mdEnv, self) => {
    const meta = tokens[idx]?.meta as LinkMeta | undefined;
    if (!meta || meta.kind === "drop") return "";
    if (meta.kind === "file") return fileClose(meta.ref, ours(mdEnv));
    return self.renderToken(tokens, idx, options);
  };
  // No remote images (the CSP would block them anyway): the alt text, linked when the source is http(s).
  rules.image = (tokens, idx) => {
    const token = tokens[idx];
    const src = String(token?.attrGet("src") ?? "");
    const alt = escapeHtml(token?.content || src);
    return safeUrl.test(src) ? `<a href="${escapeHtml(src)}" title="${escapeHtml(src)}">🖼 ${alt}</a>` : alt;
  };
  // GFM column alignment arrives as a style attribute, which the CSP refuses: a class instead.
  for (const name of ["th_open", "td_open"]) {
    rules[name] = (tokens, idx, options, _env, self) => {
      const token = tokens[idx];
      const align = /text-align:\s*(left|right|center)/.exec(String(token?.attrGet("style") ?? ""))?.[1];
      if (token?.attrs) token.attrs = token.attrs.filter(([name]) => name !== "style");
      if (token && align && align !== "left") token.attrJoin("class", `align-${align}`);
      return self.renderToken(tokens, idx, options);
    };
  }
  rules.table_open = () => '<div class="table-wrap"><table>\n';
  rules.table_close = () => "</table></div>\n";
  rules.task_checkbox = (tokens, idx) => `<input type="checkbox" class="task" disabled${tokens[idx]?.meta?.checked ? " checked" : ""}> `;
  rules.file_ref = fileRefHtml;
  return md;
}

const codeInline: RendererRule = (tokens, idx, _options, mdEnv) => {
  const content = tokens[idx]?.content ?? "";
  const code = `<code>${escapeHtml(content)}</code>`;
  const ref = tokens[idx]?.meta?.inLink ? undefined : parseFileRef(content);
  return ref ? `${fileOpen(ref, ours(mdEnv))}${code}${fileClose(ref, ours(mdEnv))}` : code;
};

const fileRefHtml: RendererRule = (tokens, idx, _options, mdEnv) => {
  const token = tokens[idx];
  const ref = token?.meta as FileRef | undefined;
  const text = escapeHtml(token?.content ?? "");
  return ref ? `${fileOpen(ref, ours(mdEnv))}${text}${fileClose(ref, ours(mdEnv))}` : text;
};

/**
 * A command's title (a tool of kind `execute`): the bridge writes the command in a code span, with a fence no
 * backtick in it can end and its hidden characters made visible (bridge/visible.py `code_span`, `one_line`). Only
 * code spans and paths are rendered in it: nothing else of it is markdown.
 */
function createTitleMarkdown(): MarkdownIt {
  const titles = markdownIt("zero", { html: false }).enable(["backticks"]);
  titles.core.ruler.push("file_refs", fileRefsInText);
  titles.renderer.rules.code_inline = codeInline;
  titles.renderer.rules.file_ref = fileRefHtml;
  return titles;
}

type LinkMeta = { kind: "web" } | { kind: "file"; ref: FileRef } | { kind: "drop" };

/** Marks each link (and its closing token) as a web link, a file link, or one to drop (text only). */
function classifyLinks(state: StateCore): void {
  for (const block of state.tokens) {
    if (block.type !== "inline" || !block.children) continue;
    const open: LinkMeta[] = [];
    for (const token of block.children) {
      if (token.type === "link_open") {
        const href = String(token.attrGet("href") ?? "");
        let meta: LinkMeta;
        if (safeUrl.test(href)) meta = { kind: "web" };
        else {
          const raw = safeDecode(href.replace(/^file:\/\//i, ""));
          const ref = parseFileRef(raw, true);
          meta = ref && !/^[a-z][\w+.-]*:/i.test(raw) ? { kind: "file", ref } : { kind: "drop" };
        }
        token.meta = meta;
        open.push(meta);
      } else if (token.type === "link_close") {
        token.meta = open.pop() ?? { kind: "drop" };
      } else if (open.length && token.type === "code_inline") {
        token.meta = { inLink: true };
      } else if (open.length && token.type === "text") {
        token.meta = { inLink: true };
      }
    }
  }
}

function safeDecode(s: string): string {
  try {
    return decodeURI(s);
  } catch {
    return s;
  }
}

/** `- [ ] a` / `- [x] b`: a disabled checkbox at the start of the item. */
function taskLists(state: StateCore): void {
  const tokens = state.tokens;
  for (let i = 2; i < tokens.length; i++) {
    const inline = tokens[i];
    if (inline?.type !== "inline" || tokens[i - 1]?.type !== "paragraph_open" || tokens[i - 2]?.type !== "list_item_open") continue;
    const first = inline.children?.[0];
    const m = first?.type === "text" ? /^\[([ xX])\](?:\s+|$)/.exec(first.content) : null;
    if (!first || !m || !inline.children) continue;
    first.content = first.content.slice(m[0].length);
    const box = new state.Token("task_checkbox", "", 0);
    box.meta = { checked: m[1] !== " " };
    inline.children.unshift(box);
    tokens[i - 2]?.attrJoin("class", "task-item");
    // The list holding it loses its bullets.
    for (let j = i - 3; j >= 0; j--) {
      const t = tokens[j];
      if (t && (t.type === "bullet_list_open" || t.type === "ordered_list_open") && t.level === (tokens[i - 2]?.level ?? 0) - 1) {
        if (!String(t.attrGet("class") ?? "").includes("task-list")) t.attrJoin("class", "task-list");
        break;
      }
    }
  }
}

/** Paths in running text (`see src/app.ts:12`) become file references, outside links. */
function fileRefsInText(state: StateCore): void {
  for (const block of state.tokens) {
    if (block.type !== "inline" || !block.children) continue;
    const out: Token[] = [];
    let changed = false;
    for (const token of block.children) {
      if (token.type !== "text" || token.meta?.inLink || !/[/.]/.test(token.content)) {
        out.push(token);
        continue;
      }
      let last = 0;
      const text = token.content;
      for (const m of text.matchAll(textRef)) {
        const path = m[1] ?? "";
        const line = m[2] ?? m[3];
        if (!path.includes("/") && !line) continue; // `foo.ts` alone in prose: too ambiguous
        if (/^(?:\w+\.)+(?:com|org|net|io|dev)$/i.test(path)) continue;
        const at = m.index;
        if (at > last) out.push(textToken(state, text.slice(last, at)));
        const ref = new state.Token("file_ref", "", 0);
        ref.content = m[0];
        ref.meta = line ? { path, line: Number(line) } : { path };
        out.push(ref);
        last = at + m[0].length;
        changed = true;
      }
      if (last === 0) out.push(token);
      else if (last < text.length) out.push(textToken(state, text.slice(last)));
    }
    if (changed) block.children = out;
  }
}

function textToken(state: StateCore, content: string): Token {
  const t = new state.Token("text", "", 0);
  t.content = content;
  return t;
}

// --- code blocks -----------------------------------------------------------------------------------

/** Beyond this a block is shown plain: highlighting is linear but a huge file is better read in an editor. */
const maxHighlightChars = 200_000;

function codeBlock(content: string, info: string): string {
  const lang = fenceLanguage(info);
  return codeShell(lang, highlightCode(content, lang));
}

/** A fence's info string's language word, cleaned. */
export function fenceLanguage(info: string): string {
  return (info.trim().split(/\s+/)[0] ?? "").toLowerCase().replace(/[^\w+#-]/g, "");
}

/** The code highlighted when its language is known (and it is not huge), else escaped. */
export function highlightCode(code: string, lang: string): string {
  const known = lang && hljs.getLanguage(lang);
  return known && code.length <= maxHighlightChars ? hljs.highlight(code, { language: lang, ignoreIllegals: true }).value : escapeHtml(code);
}

/** Whether code blocks wrap long lines (the panel's choice, `#log.code-nowrap` when not): what a new Wrap button says. */
let codeWraps = true;
export function setCodeWrap(on: boolean): void {
  codeWraps = on;
}

/** The title of a code block's Wrap button (`button.wrap-code`, pressed while long lines wrap). */
const wrapTitle = "Wrap long lines at the panel's width, or scroll them sideways (every code block)";

/**
 * A code block's wrapper: the language, the Wrap and Copy buttons (`button.wrap-code`, `button.copy-code`), and
 * `body` in `pre > code`.
 */
export function codeShell(lang: string, body: string): string {
  const known = lang && hljs.getLanguage(lang) ? lang : undefined;
  const label = lang ? `<span class="code-lang">${escapeHtml(lang)}</span>` : "<span></span>";
  const cls = known ? ` class="hljs language-${known}"` : ' class="hljs"';
  const wrap = `<button class="wrap-code" type="button" aria-pressed="${codeWraps}" title="${wrapTitle}">Wrap</button>`;
  const copy = '<button class="copy-code" type="button" title="Copy to the clipboard">Copy</button>';
  return `<div class="code-block"><div class="code-head">${label}<span class="code-actions">${wrap}${copy}</span></div><pre><code${cls}>${body}</code></pre></div>\n`;
}

// --- rendering -------------------------------------------------------------------------------------

const md = createMarkdown();

/** The whole text at once (tool titles, a reloaded panel, tests). */
export function renderMarkdown(source: string, paths?: PathLookup): string {
  return md.render(source, { paths } satisfies Env);
}

const titleMd = createTitleMarkdown();
const webAddress = /\bhttps?:\/\/\S+/g;

/**
 * A tool call's title (the card's head, a permission question's subject), shown as it is. Every character of it but
 * a command's code spans is the call's own text — a URL, a path, a pattern the model chose — so none of it is
 * markdown (attack round 23: `![ ](?token=…)` in a fetched URL rendered as a blank image and hid the query the
 * fetch sent; backticks in one made a code span and vanished; a glob's `**` turned bold): it is escaped, and its
 * paths (outside web addresses) link to files. A command's title (`kind` execute) renders its code spans.
 */
export function renderTitle(text: string, kind: string, paths?: PathLookup): string {
  if (kind === "execute") return titleMd.renderInline(text, { paths } satisfies Env);
  const env: Env = { paths };
  let html = "";
  let last = 0;
  const urls = [...text.matchAll(webAddress)].map((m) => [m.index, m.index + m[0].length] as const);
  for (const m of text.matchAll(textRef)) {
    const path = m[1] ?? "";
    const line = m[2] ?? m[3];
    if ((!path.includes("/") && !line) || urls.some(([start, end]) => m.index < end && m.index + m[0].length > start)) continue;
    const ref: FileRef = line ? { path, line: Number(line) } : { path };
    html += `${escapeHtml(text.slice(last, m.index))}${fileOpen(ref, env)}${escapeHtml(m[0])}${fileClose(ref, env)}`;
    last = m.index + m[0].length;
  }
  return html + escapeHtml(text.slice(last));
}

/** A final block of a streamed text: its HTML and where it starts in the text. */
export interface StableBlock {
  start: number;
  /** Rendered when read: a view that keeps a streamed code block never pays for highlighting it again. */
  readonly html: string;
  /** When the block is a code fence: its language and text (so a view that streamed it can keep it). */
  fence?: { lang: string; code: string };
}

/** A code fence still open at the end of a streamed text: shown live, its lines appended as they come. */
export interface OpenFence {
  /** Where the fence starts in the text (the same fence keeps it while it grows). */
  start: number;
  lang: string;
  code: string;
}

/**
 * A growing text (a streamed answer) rendered block by block. The text's prefix up to the start of its last
 * top-level block is final — no text appended later can change how a block that a later one has closed
 * parses (raw HTML is off) — so each `update` parses and renders only the text from there on: `stable` are
 * the blocks that just became final (to append after the earlier ones), `tail` the HTML of the rest, to
 * replace the previous tail. A code fence still open at the end comes as `fence` instead (its text, not its
 * HTML: a long one is appended to line by line, not rendered again each time). A text that is not an
 * extension of the last one (`reset`) starts over.
 */
export class StreamingMarkdown {
  private source = "";
  /** Characters of `source` in the final prefix. */
  private stableEnd = 0;
  /** The open fence of the last update when it can be followed without parsing (see `stillOpen`). */
  private open: { start: number; lang: string; contentStart: number; marker: string } | undefined;

  constructor(private readonly paths?: PathLookup) {}

  update(source: string): { reset: boolean; stable: StableBlock[]; tail: string; fence?: OpenFence } {
    let reset = false;
    if (source.length < this.stableEnd || !source.startsWith(this.source.slice(0, this.stableEnd))) {
      this.stableEnd = 0;
      this.open = undefined;
      reset = true;
    }
    const fast = this.stillOpen(source);
    if (fast) return fast;
    this.open = undefined;
    this.source = source;
    const env: Env = { paths: this.paths };
    const tail = source.slice(this.stableEnd);
    const tokens = md.parse(tail, env);
    // \r would make markdown-it's lines disagree with ours: such a text is rendered whole each time.
    const starts = tail.includes("\r") ? [] : blockStarts(tokens);
    const stable: StableBlock[] = [];
    let first = 0;
    if (starts.length >= 2) {
      for (let n = 0; n < starts.length - 1; n++) {
        const from = starts[n] ?? 0;
        const to = starts[n + 1] ?? tokens.length;
        const token = tokens[from];
        const blockTokens = tokens.slice(from, to);
        let html: string | undefined;
        const block: StableBlock = {
          start: this.stableEnd + offsetOfLine(tail, token?.map?.[0] ?? 0),
          get html() {
            return (html ??= md.renderer.render(blockTokens, md.options, env));
          },
        };
        if (token?.type === "fence") block.fence = { lang: fenceLanguage(token.info), code: token.content };
        stable.push(block);
      }
      first = starts[starts.length - 1] ?? 0;
    }
    const lastStart = this.stableEnd + offsetOfLine(tail, tokens[first]?.map?.[0] ?? 0);
    if (starts.length >= 2) this.stableEnd = lastStart;
    const rest = tokens.slice(first);
    const only = rest[0];
    if (rest.length === 1 && only?.type === "fence" && only.map && isOpen(only, tail)) {
      // Unindented (the usual case): its text is the source after the opening line, until a closing line comes.
      const opening = source.slice(lastStart, source.indexOf("\n", lastStart) < 0 ? source.length : source.indexOf("\n", lastStart));
      const newline = source.indexOf("\n", lastStart);
      if (/^(`{3,}|~{3,})/.test(opening) && newline >= 0 && only.content === source.slice(newline + 1)) {
        this.open = { start: lastStart, lang: fenceLanguage(only.info), contentStart: newline + 1, marker: only.markup };
      }
      return { reset, stable, tail: "", fence: { start: lastStart, lang: fenceLanguage(only.info), code: only.content } };
    }
    return { reset, stable, tail: md.renderer.render(rest, md.options, env) };
  }

  /**
   * The fast path of a long code block: the last update ended in an open, unindented fence, and the text
   * added since has no line that could close it — so it is still open and its text is the rest of the
   * source, known without parsing the block again.
   */
  private stillOpen(source: string): { reset: false; stable: StableBlock[]; tail: string; fence: OpenFence } | undefined {
    const open = this.open;
    if (!open || source.length < this.source.length || source.includes("\r", this.source.length)) return undefined;
    // From the start of the last line seen (it may have been partial) to the end.
    const from = Math.max(open.contentStart, this.source.lastIndexOf("\n", this.source.length - 1) + 1);
    const char = open.marker.startsWith("~") ? "~" : "`";
    const closing = new RegExp(`^ {0,3}${char}{${open.marker.length},}[ \\t]*$`, "m");
    if (closing.test(source.slice(from))) return undefined;
    this.source = source;
    // As markdown-it reads it: a last line of blanks alone (no newline yet) is not part of the block yet.
    const lastLine = source.lastIndexOf("\n") + 1;
    const end = lastLine > open.contentStart && /^[ \t]+$/.test(source.slice(lastLine)) ? lastLine : source.length;
    return { reset: false, stable: [], tail: "", fence: { start: open.start, lang: open.lang, code: source.slice(open.contentStart, end) } };
  }
}

/** Whether a fence token runs to the end of its text (`map` is in its lines) without a closing marker. */
function isOpen(fence: Token, text: string): boolean {
  const [from = 0, to = 0] = fence.map ?? [];
  // Text after it: it was closed (an open fence takes the rest; markdown-it may leave trailing blank lines out).
  if (text.slice(offsetOfLine(text, to)).trim() !== "") return false;
  if (to - 1 <= from) return true;
  const last = text.slice(offsetOfLine(text, to - 1)).replace(/\n$/, "");
  const marker = fence.markup;
  return !new RegExp(`^ {0,3}${marker.startsWith("~") ? "~" : "`"}{${marker.length},}\\s*$`).test(last);
}

/** Indexes of the tokens that start a top-level block. */
function blockStarts(tokens: Token[]): number[] {
  const starts: number[] = [];
  tokens.forEach((t, i) => {
    if (t.level === 0 && t.nesting !== -1 && t.block && t.map) starts.push(i);
  });
  return starts;
}

function offsetOfLine(text: string, line: number): number {
  let offset = 0;
  for (let n = 0; n < line; n++) {
    const next = text.indexOf("\n", offset);
    if (next < 0) return text.length;
    offset = next + 1;
  }
  return offset;
}
