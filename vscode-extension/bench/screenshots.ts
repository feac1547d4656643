/**
 * Screenshots of the panel (no VS Code: bench/panelPage.ts) in the four default themes, a wide and a
 * narrow sidebar, with a conversation that shows every card; plus the WCAG contrast of the status texts
 * and badges, and any CSP violation. Not a test: `node --import tsx bench/screenshots.ts [outDir]`.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { chromium } from "playwright-core";
import type { PanelAction } from "../src/panel/state";
import type { SessionUpdate } from "../src/protocol";
import { openPanel, type PanelPage, themes } from "../test/panelPage";

const out = path.resolve(process.argv[2] ?? path.join(__dirname, "../../.artifacts/panel"));
const ws = "/home/me/project";
const u = (update: SessionUpdate): PanelAction => ({ type: "update", update });
const say = (text: string): PanelAction => u({ sessionUpdate: "agent_message_chunk", content: { type: "text", text } });

const answer = `Here is what I found in **src/parser.ts** (see src/parser.ts:42):

1. The tokenizer
   1. reads lines
   2. keeps the partial one
2. The renderer — \`src/render.ts\`

- [x] add tests
- [ ] benchmark

| file | lines | change |
|---|---:|:---:|
| src/parser.ts | 120 | state |
| src/render.ts | 48 | cache |

\`\`\`ts
// render only the tail
export function render(blocks: Block[], from = 0): string {
  return blocks.slice(from).map((b) => b.html).join("");
}
\`\`\`

> Blocks before the last one never change.

A [link](https://example.com) and \`os.path\` (not a file).`;

const conversation: PanelAction[] = [
  { type: "connection", status: "ready" },
  { type: "sessionStarted", sessionId: "s1", modes: { currentModeId: "default", availableModes: [{ id: "default", name: "Default" }, { id: "plan", name: "Plan" }] } },
  { type: "turnStarted", turnId: 1, text: "Why is the parser slow? Look at @src/parser.ts", attachments: [{ label: "parser.ts", path: `${ws}/src/parser.ts` }, { label: "main.py:10-14", path: `${ws}/main.py`, line: 10 }] },
  { type: "phase", phase: "running" },
  u({ sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "Look at the tokenizer first." } }),
  u({ sessionUpdate: "tool_call", toolCallId: "r1", title: "Read `src/parser.ts`", kind: "read", status: "pending", locations: [{ path: `${ws}/src/parser.ts`, line: 1 }] }),
  u({ sessionUpdate: "tool_call_update", toolCallId: "r1", status: "completed", content: [{ type: "content", content: { type: "text", text: "     1\texport function parse() {}" } }] }),
  say(answer),
  u({ sessionUpdate: "tool_call", toolCallId: "e1", title: "Edit `src/parser.ts`", kind: "edit", status: "pending", locations: [{ path: `${ws}/src/parser.ts`, line: 12 }] }),
  u({ sessionUpdate: "tool_call_update", toolCallId: "e1", status: "completed", content: [{ type: "content", content: { type: "text", text: "The file src/parser.ts has been updated. Here's the result of running `cat -n`…" } }, { type: "diff", path: `${ws}/src/parser.ts`, oldText: "a\nb\nconst slow = true;\nd\ne", newText: "a\nb\nconst slow = false;\nconst cached = new Map();\nd\ne" }] }),
  u({ sessionUpdate: "tool_call", toolCallId: "e2", title: "Edit `src/render.ts`", kind: "edit", status: "pending" }),
  { type: "permissionRequested", permission: { id: "p0", title: "Edit `src/render.ts`", toolKind: "edit", toolCallId: "e2", hasDiff: true, diffs: [{ type: "diff", path: `${ws}/src/render.ts`, oldText: "x\ny = 1\nz", newText: "x\ny = 2\nz" }], options: [{ optionId: "allow_once", name: "Allow once", kind: "allow_once" }, { optionId: "reject_once", name: "Reject", kind: "reject_once" }] } },
  { type: "permissionSettled", id: "p0", how: "answered", optionName: "Reject" },
  u({ sessionUpdate: "tool_call_update", toolCallId: "e2", status: "failed", content: [{ type: "content", content: { type: "text", text: "Permission denied by user" } }] }),
  u({ sessionUpdate: "tool_call", toolCallId: "b1", title: "`npm test`", kind: "execute", status: "in_progress" }),
  u({ sessionUpdate: "plan", entries: [{ content: "Find the slow part", status: "completed" }, { content: "Cache the tokens", status: "in_progress" }, { content: "Benchmark", status: "pending" }] }),
  { type: "turnEnded", turnId: 1, stopReason: "end_turn" },
  { type: "turnStarted", turnId: 2, text: "now delete the build dir and fix the test", attachments: [] },
  { type: "phase", phase: "running" },
  u({ sessionUpdate: "tool_call", toolCallId: "w1", title: "Write `src/new.ts`", kind: "edit", status: "pending" }),
  { type: "permissionRequested", permission: { id: "p1", title: "Write `src/new.ts`", toolKind: "edit", toolCallId: "w1", hasDiff: true, diffs: [{ type: "diff", path: `${ws}/src/new.ts`, oldText: null, newText: "export const x = 1;\n" }], options: [{ optionId: "allow_once", name: "Allow once", kind: "allow_once" }, { optionId: "allow_always", name: "Always allow Edit(src/**) (saved to settings.local.json)", kind: "allow_always", _meta: { rule: "Edit(src/**)", destination: `${ws}/.claude/settings.local.json` } }, { optionId: "reject_once", name: "Reject", kind: "reject_once" }] } },
  { type: "permissionSettled", id: "p1", how: "answered", optionName: "Allow once" },
  u({ sessionUpdate: "tool_call", toolCallId: "x1", title: "`rm -rf build`", kind: "execute", status: "pending" }),
  { type: "permissionRequested", permission: { id: "p2", title: "`rm -rf build`", toolKind: "execute", toolCallId: "x1", hasDiff: false, destructive: true, options: [{ optionId: "allow_once", name: "Allow once", kind: "allow_once" }, { optionId: "allow_always", name: "Always allow Bash(rm -rf *) (saved to settings.local.json)", kind: "allow_always" }, { optionId: "reject_once", name: "Reject", kind: "reject_once" }] } },
];

async function main(): Promise<void> {
  fs.mkdirSync(out, { recursive: true });
  const executablePath = process.env.E2E_CHROMIUM ?? execFileSync("sh", ["-c", "command -v chromium"]).toString().trim();
  const browser = await chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
  const report: string[] = [];
  try {
    for (const theme of themes) {
      for (const [label, width] of [["wide", 480], ["narrow", 260]] as const) {
        const panel = await openPanel(browser, { theme, width, height: 1500 });
        await panel.send({ type: "workspace", folders: [ws] });
        if (label === "wide") await shoot(panel, `${theme}-welcome`, 480, 600);
        await panel.send({ type: "model", model: "claude-sonnet-4-5" });
        await panel.send({ type: "context", label: "main.py:10-14", problems: 3 });
        for (const action of conversation) await panel.send({ type: "action", action });
        await answerPaths(panel);
        await panel.page.waitForTimeout(300);
        await answerPaths(panel);
        await shoot(panel, `${theme}-${label}`);
        await panel.page.evaluate(() => document.getElementById("log")?.scrollTo(0, 0));
        await shoot(panel, `${theme}-${label}-top`);
        if (label === "wide") {
          await panel.send({ type: "action", action: { type: "progress", text: "the API is overloaded (529); retrying in 8.0 s" } });
          await panel.page.waitForTimeout(100);
          await panel.page.locator("#toolbar").screenshot({ path: path.join(out, `${theme}-progress.png`) });
          report.push(...(await contrast(panel, theme)));
          // The mention list.
          await panel.page.locator("#input").fill("look at @par");
          await panel.page.locator("#input").press("r");
          const req = await waitPosted(panel, "findFiles");
          await panel.send({ type: "files", requestId: (req as { requestId: number }).requestId, files: [{ path: "src/parser.ts" }, { path: "test/parser.test.ts" }, { path: "docs/parsing.md" }] });
          await panel.page.waitForTimeout(100);
          const box = await panel.page.locator("#composer").boundingBox();
          if (box) await panel.page.screenshot({ path: path.join(out, `${theme}-mention.png`), clip: { x: 0, y: box.y - 160, width: box.width, height: box.height + 160 } });
        }
        if (panel.violations.length) report.push(`${theme}/${label}: ${panel.violations.join(" | ")}`);
        await panel.page.close();
      }
    }
  } finally {
    await browser.close();
  }
  console.log(report.join("\n"));
  console.log(`screenshots in ${out}`);
}

async function shoot(panel: PanelPage, name: string, width?: number, height?: number): Promise<void> {
  // The page is tall enough for the whole conversation: the log is shown unscrolled.
  const clip = width && height ? { x: 0, y: 0, width, height } : undefined;
  await panel.page.screenshot({ path: path.join(out, `${name}.png`), ...(clip ? { clip } : {}) });
}

/** The host's part: paths under src/ exist. */
async function answerPaths(panel: PanelPage): Promise<void> {
  const asked = (await panel.posted()).flatMap((m) => (m.type === "checkPaths" ? m.paths : []));
  if (asked.length) await panel.send({ type: "paths", status: Object.fromEntries(asked.map((p) => [p, /^(src|test)\//.test(p) || p.startsWith(ws) ? "exists" : "missing"])) });
}

async function waitPosted(panel: PanelPage, type: string): Promise<unknown> {
  for (let i = 0; i < 50; i++) {
    const found = (await panel.posted()).filter((m) => m.type === type).pop();
    if (found) return found;
    await panel.page.waitForTimeout(50);
  }
  throw new Error(`the panel did not post ${type}`);
}

/** WCAG contrast of text against the first opaque background behind it. */
async function contrast(panel: PanelPage, theme: string): Promise<string[]> {
  const rows = await panel.page.evaluate(() => {
    const parse = (c: string): number[] => (c.match(/[\d.]+/g) ?? []).map(Number);
    const lum = ([r = 0, g = 0, b = 0]: number[]): number => {
      const f = (v: number): number => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const blend = (fg: number[], bg: number[]): number[] => {
      const a = fg[3] ?? 1;
      return [0, 1, 2].map((i) => (fg[i] ?? 0) * a + (bg[i] ?? 0) * (1 - a));
    };
    const background = (el: Element | null): number[] => {
      const layers: number[][] = [];
      for (let e = el; e; e = e.parentElement) {
        const c = parse(getComputedStyle(e).backgroundColor);
        if ((c[3] ?? 1) > 0) layers.push(c);
        if ((c[3] ?? 1) >= 1) break;
      }
      let bg = [255, 255, 255];
      for (const l of layers.reverse()) bg = blend(l, bg);
      return bg;
    };
    const selectors = [".badge.completed", ".badge.in_progress", ".badge.failed", ".reason", ".item.turnEnd", ".connection", ".chip", "a.file-link", ".review.rejected", ".keys-hint", ".warning", ".tool-kind", ".hljs-keyword", ".hljs-string", ".hljs-comment", ".hljs-number", ".hljs-title", "#welcome .hint", ".code-lang"];
    return selectors.flatMap((s) => {
      const el = document.querySelector(s);
      if (!el) return [];
      const bg = background(el);
      const fg = blend(parse(getComputedStyle(el).color), bg);
      const [l1, l2] = [lum(fg), lum(bg)].sort((a, b) => b - a);
      return [{ s, ratio: ((l1 ?? 0) + 0.05) / ((l2 ?? 0) + 0.05) }];
    });
  });
  return rows.map((r) => `${theme.padEnd(9)} ${r.s.padEnd(20)} ${r.ratio.toFixed(2)}${r.ratio < 4.5 ? "  < 4.5" : ""}`);
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
