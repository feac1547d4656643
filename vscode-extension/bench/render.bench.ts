/**
 * Render benchmark (not a CI test; scripts/bench-render runs it): a long answer streamed into the real panel
 * in headless chromium, chunks posted from a worker every 16 ms as the bridge paces them (so a busy panel
 * does not slow the sender down), keystrokes typed into the input meanwhile. Prints, per size:
 *   last chunk → rendered (ms), the worst frame (rAF gap) and the longest task, input latency p50/p95/max,
 *   keystroke → next frame p50/p95/max, and a baseline measured in the same run: rendering the whole answer at
 *   once; then ok/FAIL against issue 16's goals (6,000 streamed lines: last chunk → rendered ≤ 100 ms, no frame
 *   > 50 ms, input latency ≤ 16 ms while streaming).
 * Input latency is what the issue means by it: from the keystroke's event time (`KeyboardEvent.timeStamp`, when
 * the input happened) to the moment the typed character has been processed — the `input` event's handlers all
 * ran (a listener on window, bubbling, runs last). It includes the time the key waited behind a render task and
 * the panel's own handlers, not the wait for the next frame (up to one frame interval, which "keystroke → next
 * frame" adds). The Event Timing API's `processingEnd - startTime` of keydown/input entries is printed as a
 * cross-check (it reports only events whose duration, presentation included, reaches 16 ms).
 * Env: E2E_CHROMIUM (else `chromium` on PATH); BENCH_SIZES (default "2000,6000"); BENCH_CHUNK (chars, 80);
 * BENCH_CONTENT=code: one long code block instead of mixed markdown; =table, =paragraph: one huge table or paragraph
 * (a single markdown block, parsed whole at every update until it ends). BENCH_TRACE=1 adds the main thread's CPU time per task (load-independent) and where the time went;
 * BENCH_SCRIPT / BENCH_STYLE: another bundle and stylesheet to measure (e.g. an older build, for a before/after).
 */
import { execFileSync } from "node:child_process";
import { type Browser, chromium, type Page } from "playwright-core";
import type { PanelAction } from "../src/panel/state";
import { chunks, longAnswer, longFence, longParagraph, longTable } from "./longAnswer";
import { openPanel, origin } from "../test/panelPage";

const sizes = (process.env.BENCH_SIZES ?? "2000,6000").split(",").map(Number);
const chunkChars = Number(process.env.BENCH_CHUNK ?? 80);
const intervalMs = 16;

const streamer = `
self.onmessage = (e) => {
  const { messages, interval } = e.data;
  let i = 0;
  const next = () => {
    self.postMessage({ __bench: "chunk", data: messages[i], at: performance.timeOrigin + performance.now(), last: i === messages.length - 1 });
    i++;
    if (i < messages.length) setTimeout(next, interval);
  };
  next();
};`;

interface Figures {
  lines: number;
  chunks: number;
  streamMs: number;
  lastChunkToRenderedMs: number;
  worstFrameMs: number;
  longestTaskMs: number;
  longTasks: number;
  keys: number;
  keyP50: number;
  keyP95: number;
  keyMax: number;
  inputP50: number;
  inputP95: number;
  inputMax: number;
  eventTimingMaxMs: number;
  wholeAtOnceMs: number;
}

async function main(): Promise<void> {
  const executablePath = process.env.E2E_CHROMIUM ?? execFileSync("sh", ["-c", "command -v chromium"]).toString().trim();
  const browser = await chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
  const results: Figures[] = [];
  try {
    for (const lines of sizes) results.push(await run(browser, lines));
  } finally {
    await browser.close();
  }
  console.log("\nrender bench (chunks of %d chars every %d ms):", chunkChars, intervalMs);
  console.log("lines  chunks  stream_s  last→rendered_ms  worst_frame_ms  longest_task_ms  long_tasks  input_p50/p95/max_ms  key→frame_p50/p95/max_ms  event_timing_processed_max_ms  baseline_whole_ms");
  for (const r of results) {
    console.log(
      `${String(r.lines).padEnd(6)} ${String(r.chunks).padEnd(7)} ${(r.streamMs / 1000).toFixed(1).padEnd(9)} ${r.lastChunkToRenderedMs.toFixed(0).padEnd(17)} ${r.worstFrameMs.toFixed(0).padEnd(15)} ${r.longestTaskMs.toFixed(0).padEnd(16)} ${String(r.longTasks).padEnd(11)} ${`${r.inputP50.toFixed(1)}/${r.inputP95.toFixed(1)}/${r.inputMax.toFixed(1)}`.padEnd(21)} ${`${r.keyP50.toFixed(0)}/${r.keyP95.toFixed(0)}/${r.keyMax.toFixed(0)}`.padEnd(25)} ${r.eventTimingMaxMs.toFixed(0).padEnd(30)} ${r.wholeAtOnceMs.toFixed(0)}`,
    );
  }
  let failed = 0;
  for (const r of results) {
    console.log(`\ngoals for ${r.lines} streamed lines (issue 16 sets them for 6,000):`);
    for (const goal of goals(r)) {
      console.log(`  ${goal.ok ? "ok  " : "FAIL"} ${goal.what}`);
      if (!goal.ok) failed++;
    }
  }
  console.log(JSON.stringify(results));
  // Not a CI gate (a loaded machine moves the figures); BENCH_STRICT=1 makes a missed goal fail the run.
  if (failed && process.env.BENCH_STRICT === "1") process.exitCode = 1;
}

/** Issue 16's goals, each with the figure it was judged on. Input latency: every keystroke, not a percentile. */
function goals(r: Figures): { ok: boolean; what: string }[] {
  return [
    { ok: r.lastChunkToRenderedMs <= 100, what: `last chunk → rendered ${r.lastChunkToRenderedMs.toFixed(0)} ms (goal ≤ 100 ms)` },
    { ok: r.worstFrameMs <= 50, what: `worst frame ${r.worstFrameMs.toFixed(0)} ms, longest task ${r.longestTaskMs.toFixed(0)} ms (goal: no frame > 50 ms)` },
    { ok: r.inputMax <= 16, what: `input latency (keydown → input handled) max ${r.inputMax.toFixed(1)} ms, p95 ${r.inputP95.toFixed(1)} ms over ${r.keys} keys (goal ≤ 16 ms)` },
  ];
}

async function run(browser: Browser, lines: number): Promise<Figures> {
  const content = process.env.BENCH_CONTENT;
  const text = content === "code" ? longFence(lines) : content === "table" ? longTable(lines) : content === "paragraph" ? longParagraph(lines) : longAnswer(lines);
  const update = (t: string): PanelAction => ({ type: "update", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: t } } });
  const messages = chunks(text, chunkChars).map((t) => ({ type: "action", action: update(t) }));
  const panel = await openPanel(browser, { theme: "dark", extraFiles: { "/bench/streamer.js": streamer }, extraCsp: [`worker-src ${origin}`], script: process.env.BENCH_SCRIPT, style: process.env.BENCH_STYLE });
  const { page } = panel;
  const start: PanelAction[] = [
    { type: "connection", status: "ready" },
    { type: "sessionStarted", sessionId: "bench" },
    { type: "turnStarted", turnId: 1, text: "write a long answer", attachments: [] },
    { type: "phase", phase: "running" },
  ];
  for (const action of start) await panel.send({ type: "action", action });

  await page.evaluate(
    ({ messages, interval }) => {
      const w = window as unknown as Record<string, unknown>;
      const m = { frames: [] as number[], tasks: [] as { start: number; duration: number }[], keys: [] as number[], inputs: [] as number[], events: [] as number[], firstAt: 0, lastAt: 0, renderedAt: 0, done: false };
      w.__m = m;
      new PerformanceObserver((list) => {
        for (const e of list.getEntries()) m.tasks.push({ start: e.startTime, duration: e.duration });
      }).observe({ type: "longtask", buffered: true });
      new PerformanceObserver((list) => {
        for (const e of list.getEntries() as PerformanceEventTiming[]) if (e.name === "keydown" || e.name === "keypress" || e.name === "input") m.events.push(e.processingEnd - e.startTime);
      }).observe({ type: "event", durationThreshold: 16, buffered: true } as PerformanceObserverInit);
      const abs = (t: number): number => performance.timeOrigin + t;
      let keyAt = 0;
      document.addEventListener(
        "keydown",
        (e) => {
          const at = e.timeStamp;
          keyAt = at;
          requestAnimationFrame(() => m.keys.push(performance.now() - at));
        },
        true,
      );
      // On window, bubbling: after every handler of the input (the composer's own) has run.
      window.addEventListener("input", () => {
        if (keyAt) m.inputs.push(performance.now() - keyAt);
        keyAt = 0;
      });
      const log = document.getElementById("log");
      let prev = 0;
      const frame = (t: number): void => {
        if (prev && m.firstAt && !m.renderedAt) m.frames.push(t - prev);
        prev = t;
        if (m.lastAt && !m.renderedAt) {
          const md = log?.lastElementChild?.querySelector(".md");
          if (md?.lastElementChild?.textContent.trim() === "END-OF-STREAM") {
            m.renderedAt = abs(performance.now());
            m.done = true;
          }
        }
        if (!m.done) requestAnimationFrame(frame);
      };
      requestAnimationFrame(frame);
      const worker = new Worker("/bench/streamer.js");
      worker.onmessage = (e: MessageEvent<{ data: unknown; at: number; last: boolean }>) => {
        if (!m.firstAt) m.firstAt = e.data.at;
        window.dispatchEvent(new MessageEvent("message", { data: e.data.data }));
        if (e.data.last) m.lastAt = e.data.at;
      };
      worker.postMessage({ messages, interval });
    },
    { messages, interval: intervalMs },
  );

  const trace = process.env.BENCH_TRACE ? await browserTrace(page) : undefined;
  // Keystrokes while the answer streams (and until it has rendered).
  await page.locator("#input").focus();
  const started = Date.now();
  while (!(await page.evaluate(() => (window as unknown as { __m: { done: boolean } }).__m.done))) {
    await page.keyboard.type("a");
    await new Promise((r) => setTimeout(r, 150));
    if (Date.now() - started > 300_000) throw new Error("the answer did not render in 5 minutes");
  }
  if (trace) await trace();
  const m = await page.evaluate(() => (window as unknown as { __m: { frames: number[]; tasks: { start: number; duration: number }[]; keys: number[]; inputs: number[]; events: number[]; firstAt: number; lastAt: number; renderedAt: number } }).__m);
  const firstRel = await page.evaluate((a) => a - performance.timeOrigin, m.firstAt);
  const tasks = m.tasks.filter((t) => t.start >= firstRel);
  const keys = [...m.keys].sort((a, b) => a - b);
  const inputs = [...m.inputs].sort((a, b) => a - b);
  const pct = (p: number, of = keys): number => of[Math.min(of.length - 1, Math.floor(p * of.length))] ?? 0;

  // Baseline, same page: the whole answer rendered in one go (a reset with the final text).
  const wholeAtOnceMs = await page.evaluate(async (finalText) => {
    const t0 = performance.now();
    window.dispatchEvent(
      new MessageEvent("message", {
        data: {
          type: "action",
          action: { type: "sessionStarted", sessionId: "baseline" },
        },
      }),
    );
    window.dispatchEvent(new MessageEvent("message", { data: { type: "action", action: { type: "turnStarted", turnId: 1, text: "again", attachments: [] } } }));
    window.dispatchEvent(new MessageEvent("message", { data: { type: "action", action: { type: "update", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: finalText } } } } }));
    const log = document.getElementById("log");
    for (;;) {
      await new Promise((r) => requestAnimationFrame(r));
      const md = log?.lastElementChild?.querySelector(".md");
      if (md?.lastElementChild?.textContent.trim() === "END-OF-STREAM") return performance.now() - t0;
    }
  }, text);
  if (panel.violations.length) console.error("CSP/page errors:", panel.violations.slice(0, 5));
  await page.close();
  return {
    lines,
    chunks: messages.length,
    streamMs: m.lastAt - m.firstAt,
    lastChunkToRenderedMs: m.renderedAt - m.lastAt,
    worstFrameMs: Math.max(0, ...m.frames),
    longestTaskMs: Math.max(0, ...tasks.map((t) => t.duration)),
    longTasks: tasks.length,
    keys: keys.length,
    keyP50: pct(0.5),
    keyP95: pct(0.95),
    keyMax: keys[keys.length - 1] ?? 0,
    inputP50: pct(0.5, inputs),
    inputP95: pct(0.95, inputs),
    inputMax: inputs[inputs.length - 1] ?? 0,
    eventTimingMaxMs: Math.max(0, ...m.events),
    wholeAtOnceMs,
  };
}

/** BENCH_TRACE=1: where the main thread's time went (trace event totals), to find what to make cheaper. */
async function browserTrace(page: Page): Promise<() => Promise<void>> {
  const cdp = await page.context().newCDPSession(page);
  const events: { name: string; ph: string; ts: number; dur?: number; tdur?: number; tid: number; cat: string }[] = [];
  cdp.on("Tracing.dataCollected", (e) => {
    events.push(...(e.value as unknown as typeof events));
  });
  await cdp.send("Tracing.start", { categories: "devtools.timeline,v8,toplevel", transferMode: "ReportEvents" });
  await cdp.send("Profiler.enable");
  await cdp.send("Profiler.start");
  return async () => {
    const { profile } = (await cdp.send("Profiler.stop")) as { profile: { nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[]; samples: number[]; timeDeltas: number[] } };
    const self = new Map<number, number>();
    profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000));
    const byName = new Map<string, number>();
    for (const n of profile.nodes) {
      const key = `${n.callFrame.functionName || "(anon)"}@${n.callFrame.url.split("/").pop() ?? ""}:${n.callFrame.lineNumber}`;
      byName.set(key, (byName.get(key) ?? 0) + (self.get(n.id) ?? 0));
    }
    console.log("self time (ms):", [...byName.entries()].sort((a, b) => b[1] - a[1]).slice(0, 20).map(([k, v]) => `${k} ${v.toFixed(0)}`).join(", "));
    const done = new Promise((r) => cdp.once("Tracing.tracingComplete", r));
    await cdp.send("Tracing.end");
    await done;
    // CPU time (tdur) of the renderer main thread's tasks: what the panel costs, whatever the machine's load.
    const main = events.find((e) => e.name === "FireAnimationFrame")?.tid;
    if (process.env.BENCH_TRACE === "names") console.log([...new Set(events.filter((e) => e.tid === main && e.tdur).map((e) => e.name))].join(", "));
    const cpu = events.filter((e) => e.ph === "X" && e.tid === main && e.name === "ThreadControllerImpl::RunTask" && e.tdur).map((e) => (e.tdur ?? 0) / 1000).sort((a, b) => a - b);
    const q = (p: number): string => (cpu[Math.min(cpu.length - 1, Math.floor(p * cpu.length))] ?? 0).toFixed(1);
    console.log(`main-thread task CPU ms: p50 ${q(0.5)} p95 ${q(0.95)} p99 ${q(0.99)} max ${q(1)} (${cpu.length} tasks, ${cpu.filter((c) => c > 50).length} over 50 ms)`);
    if (process.env.BENCH_TRACE === "worst") {
      const tasks = events.filter((e) => e.tid === main && e.name === "ThreadControllerImpl::RunTask" && e.tdur).sort((a, b) => (b.tdur ?? 0) - (a.tdur ?? 0)).slice(0, 3);
      for (const t of tasks) {
        const inner = events.filter((e) => e.tid === main && e.ph === "X" && e.ts >= t.ts && e.ts < t.ts + (t.dur ?? 0) && e !== t && (e.dur ?? 0) > 2000);
        console.log(`task ${((t.tdur ?? 0) / 1000).toFixed(1)} ms cpu:`, inner.map((e) => `${e.name} ${((e.dur ?? 0) / 1000).toFixed(1)}`).join(", "));
      }
    }
    const totals = new Map<string, number>();
    for (const e of events) if (e.ph === "X" && e.dur) totals.set(e.name, (totals.get(e.name) ?? 0) + e.dur / 1000);
    const top = [...totals.entries()].sort((a, b) => b[1] - a[1]).slice(0, 14);
    console.log("trace totals (ms):", top.map(([n, ms]) => `${n} ${ms.toFixed(0)}`).join(", "));
  };
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
