/**
 * A code-server of its own for one test file (or the latency bench): the packaged .vsix installed into a fresh
 * user-data and extensions dir, started on a free port in its own process group, opened in headless chromium
 * with the Agent Bridge panel shown. Nothing of the repository's bridge leaks in: the extension installs its own.
 * Needs E2E_NODE_BIN, E2E_CODE_SERVER, E2E_CHROMIUM (printed by scripts/setup-vscode-e2e). E2E_KEEP=dir keeps each
 * code-server's logs there (a folder per run), the extension's own log among them.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { type Browser, chromium, type FrameLocator, type Page } from "playwright-core";
import { poll } from "../poll";

const vsix = path.resolve(__dirname, "../../out/agent-bridge.vsix");

export interface CodeServer {
  root: string;
  workspace: string;
  userData: string;
  page: Page;
  /** The panel's webview document (two nested iframes). */
  panel: () => FrameLocator;
  log: () => string;
  stop: () => Promise<void>;
}

export interface CodeServerOptions {
  /** User settings beside the quiet defaults (`$WORKSPACE` in a string value is the workspace folder). */
  settings?: Record<string, unknown>;
  /** Files to write in the workspace (relative path → text; `$USER_DATA` in a text is the user-data dir,
   * `$WORKSPACE` the workspace folder), before code-server opens it. */
  files?: Record<string, string>;
  /** Start with Workspace Trust on (no `--disable-workspace-trust`): the folder opens in Restricted Mode
   * unless the test trusts it. */
  workspaceTrust?: boolean;
  viewport?: { width: number; height: number };
  /** Let the page read and write the clipboard (a code block's Copy). */
  clipboard?: boolean;
}

export function requireEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run scripts/setup-vscode-e2e (scripts/test-extension does)`);
  return value;
}

export async function startCodeServer(opts: CodeServerOptions = {}): Promise<CodeServer & { browser: Browser; server: ChildProcess }> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "ab-cs-"));
  const workspace = path.join(root, "workspace");
  const userData = path.join(root, "user-data");
  fs.mkdirSync(path.join(userData, "User"), { recursive: true });
  fs.mkdirSync(workspace, { recursive: true });
  for (const [file, text] of Object.entries(opts.files ?? {})) {
    fs.mkdirSync(path.dirname(path.join(workspace, file)), { recursive: true });
    fs.writeFileSync(path.join(workspace, file), text.replaceAll("$USER_DATA", userData).replaceAll("$WORKSPACE", workspace));
  }
  fs.writeFileSync(
    path.join(userData, "User/settings.json"),
    JSON.stringify({
      "chat.disableAIFeatures": true,
      "workbench.startupEditor": "none",
      "security.workspace.trust.enabled": opts.workspaceTrust === true,
      "workbench.tips.enabled": false,
      "workbench.secondarySideBar.defaultVisibility": "hidden",
      "extensions.autoCheckUpdates": false,
      "extensions.autoUpdate": false,
      ...Object.fromEntries(Object.entries(opts.settings ?? {}).map(([k, v]) => [k, typeof v === "string" ? v.replaceAll("$WORKSPACE", workspace) : v])),
    }),
  );
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(ANTHROPIC_|AGENT_BRIDGE|VIRTUAL_ENV$)/.test(k)));
  // The bridge logs at INFO (into the extension's log): a failed send shows what the bridge was doing.
  const env = { ...clean, AGENT_BRIDGE_LOG: "INFO", PATH: `${requireEnv("E2E_NODE_BIN")}:${process.env.PATH ?? ""}`, XDG_CONFIG_HOME: path.join(root, "xdg/config"), XDG_DATA_HOME: path.join(root, "xdg/data"), XDG_CACHE_HOME: path.join(root, "xdg/cache") };
  const cs = requireEnv("E2E_CODE_SERVER");
  const common = ["--user-data-dir", userData, "--extensions-dir", path.join(root, "extensions"), "--config", path.join(root, "config.yaml")];
  fs.writeFileSync(path.join(root, "config.yaml"), "auth: none\n");
  execFileSync(cs, [...common, "--install-extension", vsix], { env, stdio: "pipe" });
  const port = await freePort();
  const trustFlags = opts.workspaceTrust ? [] : ["--disable-workspace-trust"];
  const server = spawn("setsid", [cs, ...common, "--bind-addr", `127.0.0.1:${port}`, "--auth", "none", "--disable-telemetry", "--disable-update-check", ...trustFlags, workspace], { env, stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  server.stdout.on("data", (d: Buffer) => (log += d.toString()));
  server.stderr.on("data", (d: Buffer) => (log += d.toString()));
  await poll("code-server /healthz", async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.ok === true, 30000, 100);
  const browser = await chromium.launch({ executablePath: requireEnv("E2E_CHROMIUM"), args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
  const context = await browser.newContext({ viewport: opts.viewport ?? { width: 1400, height: 900 } });
  if (opts.clipboard) await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: `http://127.0.0.1:${port}` });
  const page = await context.newPage();
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
  await page.locator(".monaco-workbench").waitFor({ timeout: 60000 });
  const panel = (): FrameLocator => page.locator("iframe.webview").first().contentFrame().locator("iframe#active-frame").contentFrame();
  const stop = async (): Promise<void> => {
    await browser.close().catch(() => undefined);
    if (server.pid) {
      try {
        process.kill(-server.pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    // The logs (VS Code's and the extension's "Agent Bridge.log") for a failure to be read after the fact.
    if (process.env.E2E_KEEP) fs.cpSync(path.join(root, "user-data/logs"), path.join(process.env.E2E_KEEP, path.basename(root)), { recursive: true });
    fs.rmSync(root, { recursive: true, force: true });
  };
  return { root, workspace, userData, page, panel, log: () => log, stop, browser, server };
}

/** Shows the Agent Bridge view and waits until its Send can send (the first start installs the bridge). */
export async function openPanel(cs: CodeServer): Promise<FrameLocator> {
  await cs.page.locator('.activitybar [aria-label^="Agent Bridge"]').first().click();
  await cs.page.mouse.move(700, 450);
  const panel = cs.panel();
  await panel.locator("#send:not([disabled])").waitFor({ timeout: 180000 });
  return panel;
}

/** The extension's own log ("Agent Bridge.log": its lines and the bridge's stderr), newest session's; "" before it exists. */
export function extensionLog(userData: string): string {
  const logs = path.join(userData, "logs");
  const sessions = fs.existsSync(logs) ? fs.readdirSync(logs).sort().reverse() : [];
  for (const session of sessions) {
    for (const host of fs.readdirSync(path.join(logs, session)).filter((d) => d.startsWith("exthost"))) {
      const file = path.join(logs, session, host, "agent-bridge.agent-bridge", "Agent Bridge.log");
      if (fs.existsSync(file)) return fs.readFileSync(file, "utf8");
    }
  }
  return "";
}

/**
 * Types `text` into the panel and sends it with Enter once Send can send; waits until the prompt shows as sent,
 * then until its turn ends (`meanwhile` runs between the two: answering a question, say). A send that never
 * shows, or a turn that never ends, fails with what the panel, the window and the extension's log showed, and a
 * screenshot (`<shots>/send-failed.png`) — a bare timeout says nothing of a flake seen once in CI.
 */
export async function sendPrompt(cs: CodeServer, panel: FrameLocator, text: string, opts: { timeoutMs?: number; shots?: string; meanwhile?: () => Promise<void> } = {}): Promise<void> {
  const turnEnds = (): Promise<number> => panel.locator(".item.turnEnd").count();
  await panel.locator("#send:not([disabled])").waitFor({ timeout: 60000 });
  const ended = await turnEnds();
  const users = await panel.locator(".item.user").count();
  await panel.locator("#input").fill(text);
  await panel.locator("#input").press("Enter");
  try {
    await poll(`${JSON.stringify(text)} to show as sent`, async () => (await panel.locator(".item.user").count()) > users, 20000, 100);
    if (opts.meanwhile) await opts.meanwhile();
    await poll(`the turn for ${JSON.stringify(text)} to end`, async () => (await turnEnds()) > ended, opts.timeoutMs ?? 30000, 100);
  } catch (err) {
    if (opts.shots) await cs.page.screenshot({ path: path.join(opts.shots, "send-failed.png") }).catch(() => undefined);
    const seen = {
      input: await panel.locator("#input").inputValue().catch((e: unknown) => String(e)),
      sendEnabled: await panel.locator("#send:not([disabled])").count().catch(() => undefined),
      connection: await panel.locator("#connection").innerText().catch(() => undefined),
      welcomeShown: await panel.locator("#welcome").isVisible().catch(() => undefined),
      items: (await panel.locator(".item").allInnerTexts().catch(() => [])).slice(-8).map((t) => t.slice(0, 200)),
      webviews: await cs.page.locator("iframe.webview").count(),
      notifications: await cs.page.locator(".notification-toast").allInnerTexts().catch(() => []),
    };
    const log = extensionLog(cs.userData).trim().split("\n").slice(-40).join("\n");
    throw new Error(`${String(err)}; the panel showed ${JSON.stringify(seen)}; the extension's log ends:\n${log}`);
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, "127.0.0.1", () => {
      const address = srv.address();
      srv.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}
