/**
 * Where a slow keystroke's time went (inputLatency.bench.ts with BENCH_TRACE=1): a Chromium trace of the whole
 * browser while keys are typed, and the CPU time of every process on the machine over the same span. Each key's
 * keystroke → painted span is a `performance.measure` named `key <ms>` in the webview; for the keys slower than
 * the goal the trace says what ran on the webview renderer's main thread meanwhile (by frame: the panel, VS Code's
 * webview host, the workbench — they share one renderer process in code-server), how long that thread waited for
 * the CPU (wall time minus thread time), and what the compositor did; /proc says which processes took the CPU.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import type { Browser, CDPSession } from "playwright-core";

interface TraceEvent {
  name: string;
  cat: string;
  ph: string;
  ts: number;
  dur?: number;
  tdur?: number;
  pid: number;
  tid: number;
  id?: string;
  id2?: { local?: string; global?: string };
  args?: { name?: string; data?: { frame?: string; url?: string; type?: string; functionName?: string; frames?: { frame: string; url: string; parent?: string }[] } };
}

const categories = [
  "-*",
  "devtools.timeline",
  "disabled-by-default-devtools.timeline",
  "disabled-by-default-devtools.timeline.frame",
  "toplevel",
  "blink.user_timing",
  "v8",
  "disabled-by-default-v8.gc",
  "input",
  "cc",
  "__metadata",
].join(",");

export async function startKeyTrace(browser: Browser): Promise<() => Promise<void>> {
  const cdp: CDPSession = await browser.newBrowserCDPSession();
  const events: TraceEvent[] = [];
  cdp.on("Tracing.dataCollected", (e: { value: object[] }) => {
    events.push(...(e.value as TraceEvent[]));
  });
  await cdp.send("Tracing.start", { traceConfig: { includedCategories: categories.split(","), recordMode: "recordContinuously" }, transferMode: "ReportEvents" });
  return async () => {
    const done = new Promise((r) => cdp.once("Tracing.tracingComplete", r));
    await cdp.send("Tracing.end");
    await done;
    if (process.env.BENCH_TRACE_FILE) fs.writeFileSync(process.env.BENCH_TRACE_FILE, JSON.stringify({ traceEvents: events }));
    analyse(events);
  };
}

// --- the machine: CPU seconds per kind of process over the span -------------------------------------------
/** Starts counting every process's CPU time; the returned function prints what each kind of process took. */
export function cpuMeter(): () => string {
  const before = processCpu();
  const wallBefore = Date.now();
  return () => reportCpu(before, processCpu(), (Date.now() - wallBefore) / 1000);
}

function processCpu(): Map<number, { what: string; ticks: number }> {
  const out = new Map<number, { what: string; ticks: number }>();
  for (const pid of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const ticks = Number(fields[11]) + Number(fields[12]);
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
      out.set(Number(pid), { what: classify(cmd), ticks });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

function classify(cmd: string): string {
  if (/chrom/.test(cmd)) {
    const type = /--type=([\w-]+)/.exec(cmd)?.[1];
    return `chromium ${type ?? "browser"}`;
  }
  if (/extensionHost|type=extensionHost/.test(cmd)) return "code-server extension host";
  if (/code-server|vscode-server|out\/server-main|bootstrap-fork/.test(cmd)) return "code-server (server)";
  if (/agent-bridge|bridge\.|-m bridge/.test(cmd)) return "agent bridge";
  if (/inputLatency|tsx/.test(cmd)) return "this bench (node)";
  return `other: ${cmd.split(" ")[0]?.split("/").pop() ?? "?"}`;
}

function reportCpu(before: Map<number, { what: string; ticks: number }>, after: Map<number, { what: string; ticks: number }>, seconds: number): string {
  const hz = 100;
  const by = new Map<string, number>();
  for (const [pid, a] of after) {
    const used = (a.ticks - (before.get(pid)?.ticks ?? 0)) / hz;
    if (used > 0) by.set(a.what, (by.get(a.what) ?? 0) + used);
  }
  const rows = [...by.entries()].sort((x, y) => y[1] - x[1]).slice(0, 12);
  const total = [...by.values()].reduce((s, v) => s + v, 0);
  const cores = os.cpus().length;
  return [
    `CPU while streaming, every process on the machine: ${total.toFixed(1)} CPU-s in ${seconds.toFixed(1)} s (${cores} cores: ${(cores * seconds).toFixed(0)} CPU-s)`,
    ...rows.map(([what, used]) => `  ${used.toFixed(1).padStart(6)} s  ${((100 * used) / seconds).toFixed(0).padStart(3)}% of a core  ${what}`),
  ].join("\n");
}

// --- the trace: what ran while each slow key waited --------------------------------------------------------
function analyse(events: TraceEvent[]): void {
  const keys = keySpans(events);
  if (!keys.length) return console.log("trace: no key spans found");
  const pid = keys[0]?.pid ?? 0;
  const threadName = new Map<number, string>();
  for (const e of events) if (e.ph === "M" && e.name === "thread_name" && e.pid === pid) threadName.set(e.tid, e.args?.name ?? "");
  const main = [...threadName.entries()].find(([, n]) => n === "CrRendererMain")?.[0];
  const compositor = [...threadName.entries()].find(([, n]) => n === "Compositor")?.[0];
  const frames = frameNames(events);
  const renderers = new Set(events.filter((e) => e.ph === "M" && e.name === "thread_name" && e.args?.name === "CrRendererMain").map((e) => e.pid));
  console.log(`\ntrace: ${keys.length} keys, the webview in renderer pid ${pid} (${renderers.size} renderer processes in the trace)`);
  const onMain = events.filter((e) => e.pid === pid && e.tid === main && e.ph === "X" && e.dur !== undefined).sort((a, b) => a.ts - b.ts);
  const tasks = onMain.filter((e) => e.name === "ThreadControllerImpl::RunTask" || e.name === "ThreadPool_RunTask");
  const onCompositor = events.filter((e) => e.pid === pid && e.tid === compositor && e.ph === "X" && e.dur !== undefined);
  const slow = keys.filter((k) => k.ms > 16);
  const fast = keys.filter((k) => k.ms <= 16);
  const sum = (spans: typeof keys): Record<string, number> => {
    const out: Record<string, number> = {};
    const add = (k: string, v: number): void => void (out[k] = (out[k] ?? 0) + v);
    for (const k of spans) {
      const inside = (e: TraceEvent): number => Math.max(0, Math.min(e.ts + (e.dur ?? 0), k.end) - Math.max(e.ts, k.start)) / 1000;
      let busy = 0;
      let cpu = 0;
      for (const t of tasks) {
        if (t.ts >= k.end || t.ts + (t.dur ?? 0) <= k.start) continue;
        const part = inside(t);
        busy += part;
        if (t.tdur !== undefined && t.dur) cpu += part * Math.min(1, t.tdur / t.dur);
      }
      add("main thread busy", busy);
      add("  of it waiting for a CPU (wall − thread time)", busy - cpu);
      for (const e of onMain) {
        if (e.ts >= k.end || e.ts + (e.dur ?? 0) <= k.start || e.name.includes("RunTask")) continue;
        const part = inside(e);
        if (part <= 0) continue;
        const frame = e.args?.data?.frame ? frames.get(e.args.data.frame) : undefined;
        const label = e.name === "FunctionCall" || e.name === "EventDispatch" || e.name === "TimerFire" || e.name === "FireAnimationFrame" ? `${e.name}${e.args?.data?.type ? `(${e.args.data.type})` : ""} [${frame ?? shortUrl(e.args?.data?.url)}]` : e.name;
        add(`  ${label}`, part);
      }
      for (const e of onCompositor) if (e.ts < k.end && e.ts + (e.dur ?? 0) > k.start && !e.name.includes("RunTask")) add(`compositor: ${e.name}`, inside(e));
      add("keystroke → painted", k.ms);
    }
    for (const key of Object.keys(out)) out[key] = (out[key] ?? 0) / Math.max(1, spans.length);
    return out;
  };
  const print = (what: string, spans: typeof keys): void => {
    const s = sum(spans);
    const rows = Object.entries(s)
      .filter(([k, v]) => v >= 0.3 || k === "keystroke → painted")
      .sort((a, b) => (a[0] === "keystroke → painted" ? -1 : b[0] === "keystroke → painted" ? 1 : a[0].startsWith("main") ? -1 : b[0].startsWith("main") ? 1 : b[1] - a[1]))
      .slice(0, 24);
    console.log(`${what} (${spans.length} keys), mean ms per key (nested events overlap):`);
    for (const [k, v] of rows) console.log(`  ${v.toFixed(1).padStart(6)}  ${k}`);
  };
  print("keys slower than 16 ms", slow);
  print("keys within 16 ms", fast);
  const worst = [...keys].sort((a, b) => b.ms - a.ms).slice(0, 3);
  for (const k of worst) print(`the key of ${k.ms.toFixed(1)} ms`, [k]);
}

function keySpans(events: TraceEvent[]): { ms: number; start: number; end: number; pid: number }[] {
  const begins = new Map<string, TraceEvent>();
  const out: { ms: number; start: number; end: number; pid: number }[] = [];
  for (const e of events) {
    if (e.cat !== "blink.user_timing" || !e.name.startsWith("key ")) continue;
    const id = `${e.pid}:${e.id ?? e.id2?.local ?? e.id2?.global ?? ""}:${e.name}`;
    if (e.ph === "b") begins.set(id, e);
    else if (e.ph === "e") {
      const b = begins.get(id);
      if (b) out.push({ ms: Number(e.name.slice(4)), start: b.ts, end: e.ts, pid: e.pid });
    }
  }
  return out;
}

/** Frame ids → a short name: the panel (its document is webview.js's), VS Code's webview host, the workbench. */
function frameNames(events: TraceEvent[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of events) {
    const data = e.args?.data;
    for (const f of data?.frames ?? []) out.set(f.frame, frameKind(f.url, f.parent));
    if (e.name === "CommitLoad" && data?.frame && data.url) out.set(data.frame, frameKind(data.url, "x"));
  }
  return out;
}

function frameKind(url: string, parent: string | undefined): string {
  if (!parent) return "workbench";
  if (/active-frame|fake\.html|vscode-resource|vscode-cdn/.test(url) && !/index\.html/.test(url)) return "panel";
  if (/webview\/browser\/pre\/index\.html/.test(url)) return "webview host";
  return shortUrl(url);
}

function shortUrl(url: string | undefined): string {
  if (!url) return "";
  return url.replace(/^https?:\/\/[^/]+/, "").split("?")[0]?.split("/").slice(-2).join("/") ?? url;
}
