/**
 * Input latency as a user feels it (issue 24 item 13; not a CI test: scripts/bench-render runs it): the real
 * extension from its .vsix in a real code-server, its bridge on the offline model streaming a 6,000-line answer
 * (chunks of 80 characters, one every 16 ms), while keys are typed into the panel's input, one every 100 ms.
 * Each key is timed in the webview from the keystroke (`KeyboardEvent.timeStamp`, when the input arrived) to the
 * character painted: the `input` event handled, the next animation frame, and a task posted from that frame,
 * which runs once the frame is painted. Prints p50/p95/max while streaming, and idle in the same run (the
 * baseline), and ok/FAIL against the goals (while streaming: p95 ≤ 16 ms, max ≤ 50 ms).
 * Env: E2E_NODE_BIN, E2E_CODE_SERVER, E2E_CHROMIUM (scripts/setup-vscode-e2e), a packaged out/agent-bridge.vsix;
 * BENCH_LINES (6000), BENCH_KEY_MS (100), BENCH_STRICT=1 (a FAIL exits 1);
 * BENCH_TRACE=1: a Chromium trace of the streaming part and the CPU each process took meanwhile, and where the
 * slow keys' time went (keyTrace.ts; BENCH_TRACE_FILE=x.json keeps the trace for chrome://tracing or Perfetto);
 * BENCH_CONTROL=drop: the control — the same stream, bridge, extension host and transport, but the panel drops
 * the stream's text before its own code sees it (what is left of the latency is not the panel's to fix).
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { FrameLocator, Page } from "playwright-core";
import { openPanel, startCodeServer } from "../test/e2e/codeServer";
import { cpuMeter, startKeyTrace } from "./keyTrace";
import { chunks, longAnswer } from "./longAnswer";

const lines = Number(process.env.BENCH_LINES ?? 6000);
const keyEveryMs = Number(process.env.BENCH_KEY_MS ?? 100);
const control = process.env.BENCH_CONTROL === "drop";

interface Samples {
  painted: number[];
  handled: number[];
  longTasks: number[];
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ab-latency-"));
  const scenario = path.join(dir, "long.json");
  const text = longAnswer(lines);
  fs.writeFileSync(scenario, JSON.stringify({ name: "long-answer", after_last: "end_turn_text", responses: [{ content: [{ type: "text", deltas: chunks(text, 80) }], stop_reason: "end_turn", delay_ms: 16 }] }));
  const cs = await startCodeServer({ settings: { "agentBridge.offlineScenario": scenario } });
  try {
    const panel = await openPanel(cs);
    await instrument(panel);
    await panel.locator("#input").click();
    const idle = await typeKeys(cs.page, panel, { count: 30 });
    await panel.locator("#input").fill("stream a long answer");
    await panel.locator("#input").press("Enter");
    await panel.locator(control ? "#stop:not([disabled])" : ".item.agent").first().waitFor({ timeout: 60000 });
    const trace = process.env.BENCH_TRACE ? await startKeyTrace(cs.browser) : undefined;
    const started = Date.now();
    const cpu = cpuMeter();
    const streaming = await typeKeys(cs.page, panel, { until: () => streamEnded(panel) });
    const seconds = (Date.now() - started) / 1000;
    const cpuUsed = cpu();
    const shown = await panel.locator("body").evaluate(() => document.querySelector(".item.agent .md")?.textContent.length ?? 0);
    if (control !== (shown === 0)) throw new Error(`the panel shows ${shown} characters of the answer: the control ${control ? "did not drop" : "dropped"} the stream`);
    await trace?.();
    report(idle, streaming, seconds);
    console.log(cpuUsed);
  } finally {
    await cs.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Timing hooks in the webview (they run after the panel's own handlers: on window, bubbling). */
async function instrument(panel: FrameLocator): Promise<void> {
  await panel.locator("body").evaluate((_body, dropStream: boolean) => {
    const w = window as unknown as { __lat: { painted: number[]; handled: number[]; longTasks: number[] }; __keyAt: number };
    w.__lat = { painted: [], handled: [], longTasks: [] };
    w.__keyAt = 0;
    document.addEventListener("keydown", (e) => (w.__keyAt = e.timeStamp), true);
    window.addEventListener("input", () => {
      const at = w.__keyAt;
      if (!at) return;
      w.__keyAt = 0;
      w.__lat.handled.push(performance.now() - at);
      requestAnimationFrame(() => {
        const channel = new MessageChannel();
        channel.port1.onmessage = () => {
          const ms = performance.now() - at;
          w.__lat.painted.push(ms);
          performance.measure(`key ${ms.toFixed(1)}`, { start: at, end: at + ms });
        };
        channel.port2.postMessage(0);
      });
    });
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) w.__lat.longTasks.push(entry.duration);
    }).observe({ type: "longtask", buffered: false });
    if (dropStream) {
      // VS Code's webview host hands each message to the panel with this window's postMessage: a stand-in keeps
      // everything but the stream's text (a listener could not go before the panel's own, registered first).
      // (No named functions in here: the bundler's keepNames helper does not exist in the page.)
      type Action = { type: string; update?: { sessionUpdate?: string } };
      type Msg = { type: string; action?: Action; actions?: Action[] };
      const deliver = window.postMessage.bind(window) as (m: Msg, origin: string, transfer?: Transferable[]) => void;
      (window as unknown as { postMessage: typeof deliver }).postMessage = (m, origin, transfer) => {
        if (m.type === "action" && m.action?.type === "update" && m.action.update?.sessionUpdate === "agent_message_chunk") return;
        if (m.type === "actions" && m.actions) {
          const kept = m.actions.filter((a) => !(a.type === "update" && a.update?.sessionUpdate === "agent_message_chunk"));
          if (!kept.length) return;
          m = { type: "actions", actions: kept };
        }
        deliver(m, origin, transfer);
      };
    }
  }, control);
}

async function typeKeys(page: Page, panel: FrameLocator, opts: { count?: number; until?: () => Promise<boolean> }): Promise<Samples> {
  await panel.locator("body").evaluate(() => {
    const w = window as unknown as { __lat: Samples };
    w.__lat.painted = [];
    w.__lat.handled = [];
    w.__lat.longTasks = [];
  });
  for (let n = 0; opts.count === undefined || n < opts.count; n++) {
    if (opts.until && (await opts.until())) break;
    await page.keyboard.type(n % 20 === 19 ? " " : "a");
    await new Promise((r) => setTimeout(r, keyEveryMs));
  }
  // Let the last key's frame paint.
  await new Promise((r) => setTimeout(r, 200));
  const samples = await panel.locator("body").evaluate(() => (window as unknown as { __lat: Samples }).__lat);
  await panel.locator("#input").fill("");
  return samples;
}

function streamEnded(panel: FrameLocator): Promise<boolean> {
  return panel.locator("body").evaluate(() => {
    const last = [...document.querySelectorAll(".item.agent .md")].pop();
    return last?.lastElementChild?.textContent.trim() === "END-OF-STREAM" || document.querySelectorAll(".item.turnEnd").length > 0;
  });
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;
}

function figures(values: number[]): { n: number; p50: number; p95: number; max: number } {
  const sorted = [...values].sort((a, b) => a - b);
  return { n: sorted.length, p50: pct(sorted, 0.5), p95: pct(sorted, 0.95), max: sorted[sorted.length - 1] ?? 0 };
}

function report(idle: Samples, streaming: Samples, seconds: number): void {
  const row = (what: string, s: Samples): string => {
    const painted = figures(s.painted);
    const handled = figures(s.handled);
    const tasks = figures(s.longTasks);
    return `${what.padEnd(10)} ${String(painted.n).padEnd(5)} ${`${painted.p50.toFixed(1)}/${painted.p95.toFixed(1)}/${painted.max.toFixed(1)}`.padEnd(24)} ${`${handled.p50.toFixed(1)}/${handled.p95.toFixed(1)}/${handled.max.toFixed(1)}`.padEnd(24)} ${tasks.n} (max ${tasks.max.toFixed(0)} ms)`;
  };
  if (control) console.log("\nCONTROL: the stream's text was dropped in the panel before its code saw it");
  console.log(`\ninput latency in code-server's webview, keystroke → character painted (${lines} lines streamed in ${seconds.toFixed(0)} s; a key every ${keyEveryMs} ms):`);
  console.log("           keys  painted p50/p95/max ms    handled p50/p95/max ms    long tasks in the webview");
  console.log(row("idle", idle));
  console.log(row("streaming", streaming));
  const s = figures(streaming.painted);
  const goals = [
    { ok: s.p95 <= 16, what: `p95 ${s.p95.toFixed(1)} ms while streaming (goal ≤ 16 ms)` },
    { ok: s.max <= 50, what: `max ${s.max.toFixed(1)} ms while streaming (goal ≤ 50 ms)` },
  ];
  for (const g of goals) console.log(`  ${g.ok ? "ok  " : "FAIL"} ${g.what}`);
  console.log(JSON.stringify({ lines, seconds, idle: figures(idle.painted), streaming: s, handled: figures(streaming.handled), longTasks: figures(streaming.longTasks) }));
  if (goals.some((g) => !g.ok) && process.env.BENCH_STRICT === "1") process.exitCode = 1;
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
