/**
 * End to end in a real VS Code: code-server (VS Code 1.139) driven by headless Debian chromium through
 * playwright-core. Installs the packaged .vsix, opens the panel, talks to the offline playground model.
 * Needs E2E_NODE_BIN, E2E_CODE_SERVER, E2E_CHROMIUM (printed by scripts/setup-vscode-e2e).
 */
import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { type Browser, chromium, type FrameLocator, type Page } from "playwright-core";
import { bridgeCommand } from "../server/bridgeServer";

const repo = path.resolve(__dirname, "../../..");
const vsix = path.resolve(__dirname, "../../out/agent-bridge.vsix");
const shots = process.env.E2E_ARTIFACTS ?? path.join(repo, ".artifacts/vscode-e2e");
const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run scripts/setup-vscode-e2e (scripts/test-extension does)`);
  return value;
};

describe("the extension in a real VS Code (code-server)", () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "ab-e2e-"));
  const workspace = path.join(root, "workspace");
  const userData = path.join(root, "user-data");
  const extensions = path.join(root, "extensions");
  let server: ChildProcess | undefined;
  let browser: Browser | undefined;
  let page: Page;
  let panel: FrameLocator;
  let serverLog = "";

  const csEnv = (): NodeJS.ProcessEnv => ({
    ...process.env,
    PATH: `${env("E2E_NODE_BIN")}:${process.env.PATH ?? ""}`,
    XDG_CONFIG_HOME: path.join(root, "xdg/config"),
    XDG_DATA_HOME: path.join(root, "xdg/data"),
    XDG_CACHE_HOME: path.join(root, "xdg/cache"),
  });
  const shot = async (name: string): Promise<void> => {
    await page.screenshot({ path: path.join(shots, `${name}.png`) });
  };

  before(async () => {
    fs.mkdirSync(shots, { recursive: true });
    for (const f of fs.readdirSync(shots)) if (f.endsWith(".png")) fs.rmSync(path.join(shots, f));
    fs.mkdirSync(path.join(userData, "User"), { recursive: true });
    fs.mkdirSync(workspace, { recursive: true });
    fs.writeFileSync(path.join(workspace, "hello.py"), 'def greet(name):\n    return f"hello {name}"\n');
    fs.writeFileSync(
      path.join(userData, "User/settings.json"),
      JSON.stringify({
        "chat.disableAIFeatures": true,
        "workbench.startupEditor": "none",
        "security.workspace.trust.enabled": false,
        "workbench.tips.enabled": false,
        "workbench.secondarySideBar.defaultVisibility": "hidden",
        "extensions.autoCheckUpdates": false,
        "extensions.autoUpdate": false,
        "agentBridge.serverCommand": [bridgeCommand(), "serve"],
        "agentBridge.offlineScenario": "playground",
      }),
    );
    const cs = env("E2E_CODE_SERVER");
    const common = ["--user-data-dir", userData, "--extensions-dir", extensions, "--config", path.join(root, "config.yaml")];
    fs.writeFileSync(path.join(root, "config.yaml"), "auth: none\n");
    execFileSync(cs, [...common, "--install-extension", vsix], { env: csEnv(), stdio: "pipe" });
    const port = await freePort();
    server = spawn(
      "setsid",
      [cs, ...common, "--bind-addr", `127.0.0.1:${port}`, "--auth", "none", "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust", workspace],
      { env: csEnv(), stdio: ["ignore", "pipe", "pipe"] },
    );
    server.stdout?.on("data", (d: Buffer) => (serverLog += d.toString()));
    server.stderr?.on("data", (d: Buffer) => (serverLog += d.toString()));
    await poll("code-server /healthz", async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.ok === true, 30000);
    browser = await chromium.launch({ executablePath: env("E2E_CHROMIUM"), args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
    await page.locator(".monaco-workbench").waitFor({ timeout: 60000 });
  });

  after(async () => {
    // The last state, whatever happened (a failed step leaves the screen that explains it).
    if ((page as Page | undefined) !== undefined) await shot("99-last").catch(() => undefined);
    await browser?.close();
    if (server?.pid) {
      try {
        process.kill(-server.pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    const logs = findLogs(userData);
    fs.writeFileSync(path.join(shots, "extension.log"), logs);
    fs.writeFileSync(path.join(shots, "code-server.log"), serverLog);
    fs.rmSync(root, { recursive: true, force: true });
  });

  it("opens the panel from the activity bar and connects to the bridge", async () => {
    await page.locator('.activitybar [aria-label^="Agent Bridge"]').first().click();
    await page.mouse.move(700, 450); // no hover tooltip in the screenshots
    panel = page.locator("iframe.webview").first().contentFrame().locator("iframe#active-frame").contentFrame();
    await panel.locator("#send:not([disabled])").waitFor({ timeout: 60000 });
    await panel.locator("#mode option").first().waitFor({ state: "attached" });
    await shot("01-panel-open");
  });

  it("sends a prompt and sees the streamed markdown reply", async () => {
    await panel.locator("#input").fill("hello from **VS Code**");
    await panel.locator("#input").press("Enter");
    await panel.locator(".item.user", { hasText: "hello from" }).waitFor();
    await panel.locator(".item.turnEnd").first().waitFor({ timeout: 30000 });
    const reply = await panel.locator(".item.agent").last().innerText();
    assert.match(reply, /hello from/);
    assert.ok((await panel.locator(".item.agent strong").count()) > 0, "markdown is rendered");
    assert.match(await panel.locator(".item.turnEnd").first().innerText(), /Done/);
    await shot("02-streamed-reply");
  });

  it("shows thinking collapsed above the answer", async () => {
    await panel.locator("#input").fill("think: about the plan");
    await panel.locator("#input").press("Enter");
    await poll("the thinking turn to end", async () => (await panel.locator(".item.turnEnd").count()) === 2, 30000);
    const details = panel.locator(".item.thought details");
    await details.waitFor();
    assert.equal(await details.getAttribute("open"), null, "thinking is collapsed");
    await shot("02b-thinking-collapsed");
  });

  it("answers a permission card, and the command runs", async () => {
    await panel.locator("#input").fill("run: touch made-in-vscode && echo from-e2e");
    await panel.locator("#send").click();
    const card = panel.locator(".item.permission button.option").first();
    await card.waitFor({ timeout: 30000 });
    assert.match(await panel.locator(".item.permission").innerText(), /Always allow Bash\(touch \*\)/);
    await shot("03-permission-card");
    await panel.locator(".item.permission button.allow_once").click();
    await poll("the second turn to end", async () => (await panel.locator(".item.turnEnd").count()) === 3, 30000);
    assert.match(await panel.locator(".item.agent").last().innerText(), /from-e2e/);
    assert.ok(fs.existsSync(path.join(workspace, "made-in-vscode")));
    await shot("04-permission-answered");
  });

  it("starts a long command and cancels it with the agentBridge.cancel command; the turn ends cancelled", async () => {
    await panel.locator("#input").fill("run: sleep 30");
    await panel.locator("#send").click();
    await panel.locator(".item.permission button.allow_once").waitFor({ timeout: 30000 });
    await panel.locator(".item.permission button.allow_once").click();
    await panel.locator(".item.tool .badge.in_progress").waitFor({ timeout: 30000 });
    assert.equal(await panel.locator("#stop").isDisabled(), false, "Stop is enabled while the turn runs");
    await page.locator('.statusbar [aria-label*="Agent: running"]').first().waitFor({ timeout: 10000 });
    await shot("05-long-command-running");
    const t0 = Date.now();
    await runCommand(page, "Agent Bridge: Cancel Turn");
    await panel.locator(".item.turnEnd .reason.cancelled").waitFor({ timeout: 15000 });
    const elapsed = Date.now() - t0;
    assert.ok(elapsed < 10000, `cancelled in ${elapsed} ms`);
    assert.equal(await panel.locator("#stop").isDisabled(), true, "Stop is disabled again");
    await shot("06-cancelled");
  });

  it("a new session clears the panel; Escape in the panel cancels a long answer", async () => {
    await runCommand(page, "Agent Bridge: New Session");
    await poll("the panel to clear", async () => (await panel.locator(".item").count()) === 0, 10000);
    await panel.locator("#input").fill("long");
    await panel.locator("#input").press("Enter");
    await panel.locator(".item.agent").first().waitFor({ timeout: 15000 });
    // Auto-scroll: scrolled up, the view stays put while text streams in; back at the bottom, it follows again.
    const log = panel.locator("#log");
    const metrics = (): Promise<{ top: number; height: number; client: number }> =>
      log.evaluate((el) => ({ top: el.scrollTop, height: el.scrollHeight, client: el.clientHeight }));
    await poll("the answer to overflow the panel", async () => ((m) => m.height > m.client + 200)(await metrics()), 15000);
    await log.evaluate((el) => el.scrollTo({ top: 0 }));
    const before = await metrics();
    await poll("more streamed text", async () => (await metrics()).height > before.height + 100, 10000);
    assert.ok((await metrics()).top < 5, "scrolled up: the view does not jump to the bottom");
    assert.equal(await panel.locator("#jump").isVisible(), true, "a jump-to-latest button shows");
    await shot("07a-scrolled-up-while-streaming");
    await log.evaluate((el) => el.scrollTo({ top: el.scrollHeight }));
    const atBottom = await metrics();
    await poll("more streamed text", async () => (await metrics()).height > atBottom.height + 100, 10000);
    await poll("the view to follow the stream", async () => ((m) => m.height - m.top - m.client < 40)(await metrics()), 5000);
    await panel.locator("#input").press("Escape");
    await panel.locator(".item.turnEnd .reason.cancelled").waitFor({ timeout: 15000 });
    await shot("07-escape-cancelled");
  });

  it("resumes the first session from the stored list: its history replays into the panel and it goes on", async () => {
    await runCommand(page, "Agent Bridge: Resume Session");
    await page.locator(".quick-input-widget", { hasText: "resume a session" }).waitFor({ timeout: 15000 });
    const row = page.locator(".quick-input-list .monaco-list-row", { hasText: "hello from" }).first();
    await row.waitFor({ timeout: 15000 });
    assert.equal(await page.locator(".quick-input-list .monaco-list-row", { hasText: /^long/ }).count(), 0, "the current session is not offered");
    await row.click();
    await panel.locator(".item.user", { hasText: "hello from" }).waitFor({ timeout: 15000 });
    await poll("the replayed tool calls", async () => (await panel.locator(".item.tool").count()) >= 2, 15000);
    assert.match(await panel.locator(".item.agent").first().innerText(), /hello from/);
    await shot("07b-resumed-session");
    await panel.locator("#input").fill("back again");
    await panel.locator("#input").press("Enter");
    await poll("the resumed session's turn to end", async () => (await panel.locator(".item.turnEnd").count()) === 1, 30000);
    assert.match(await panel.locator(".item.turnEnd").first().innerText(), /Done/);
  });

  // The offline playground has no edit and never withdraws a request: a stub bridge (test/e2e/stubBridge.cjs)
  // covers those UI paths. Changing the setting also shows the extension restarting its server.
  const answers = path.join(root, "stub-answers.jsonl");
  const stubAnswers = (): unknown[] =>
    fs.existsSync(answers) ? fs.readFileSync(answers, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l) as unknown) : [];

  it("restarts on a settings change; an edit's permission opens the diff editor and is accepted there", async () => {
    // Workspace settings: the workspace folder is watched (the user settings file on code-server's side is not).
    fs.mkdirSync(path.join(workspace, ".vscode"), { recursive: true });
    const settings = {
      "agentBridge.serverCommand": [process.execPath, path.join(__dirname, "stubBridge.cjs"), answers],
      "agentBridge.offlineScenario": "",
    };
    fs.writeFileSync(path.join(workspace, ".vscode/settings.json"), JSON.stringify(settings));
    await poll("the panel to reset on the stub", async () => (await panel.locator(".item").count()) === 0 && !(await panel.locator("#send").isDisabled()), 30000);
    await panel.locator("#input").fill("edit hello.py please");
    await panel.locator("#input").press("Enter");
    await panel.locator(".item.permission button", { hasText: "Show diff" }).waitFor({ timeout: 15000 });
    const diffTab = page.locator(".tabs-container .tab", { hasText: "proposed edit" });
    await diffTab.first().waitFor({ timeout: 15000 });
    await page.locator(".editor-instance .monaco-diff-editor").first().waitFor({ timeout: 15000 });
    await panel.locator("#plan li").first().waitFor();
    await shot("08-edit-diff-editor");
    // Accept where the diff is: the ✓ in the diff editor's title bar.
    await page.locator('.editor-actions [aria-label*="Accept Proposed Edit"]').first().click({ timeout: 15000 });
    await poll("the edit turn to end", async () => (await panel.locator(".item.turnEnd").count()) === 1, 15000);
    assert.deepEqual(stubAnswers()[0], { outcome: { outcome: "selected", optionId: "allow_once" } });
    await poll("the diff tab to close", async () => (await diffTab.count()) === 0, 10000);
    assert.match(await panel.locator(".item.agent").last().innerText(), /accepted/);
    await shot("09-edit-accepted");
  });

  it("a permission request withdrawn by the bridge disappears from the panel", async () => {
    await panel.locator("#input").fill("withdraw");
    await panel.locator("#input").press("Enter");
    await panel.locator(".item.permission button.option").first().waitFor({ timeout: 15000 });
    await shot("10a-before-withdraw");
    await poll("the card to disappear", async () => (await panel.locator(".item.permission button.option").count()) === 0, 10000);
    await poll("the turn to end", async () => (await panel.locator(".item.turnEnd").count()) === 2, 10000);
    assert.deepEqual(stubAnswers()[1], { outcome: { outcome: "cancelled" } });
    await shot("10-withdrawn");
  });

  it("“Ask about selection” sends the editor's selection as a resource block", async () => {
    await page.keyboard.press("Control+P");
    await page.locator(".quick-input-widget input").fill("hello.py");
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "hello.py" }).first().waitFor();
    await page.keyboard.press("Enter");
    await page.locator(".editor-instance .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+A");
    await runCommand(page, "Agent Bridge: Ask About Selection");
    await page.locator(".quick-input-widget", { hasText: "Ask the agent about the selection" }).waitFor();
    await page.locator(".quick-input-widget input").press("Enter"); // the default question
    await panel.locator(".item.user .chip", { hasText: "hello.py:1-" }).waitFor({ timeout: 15000 });
    await poll("the turn to end", async () => (await panel.locator(".item.turnEnd").count()) === 3, 10000);
    assert.match(await panel.locator(".item.agent").last().innerText(), /stub got: file:\/\/.*hello\.py#L1-2/);
    await shot("11-ask-about-selection");
  });
});

async function runCommand(page: Page, title: string): Promise<void> {
  // The palette's list can miss a command whose context key changed a moment ago: reopen it once before failing.
  for (let attempt = 1; ; attempt++) {
    await page.locator(".part.statusbar").click({ position: { x: 700, y: 5 } }).catch(() => undefined);
    await page.keyboard.press("F1");
    const box = page.locator(".quick-input-widget input");
    await box.waitFor();
    await box.fill(`>${title}`);
    const row = page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first();
    try {
      await row.waitFor({ timeout: 10000 });
      await page.keyboard.press("Enter");
      return;
    } catch (err) {
      const shown = await page.locator(".quick-input-list .monaco-list-row").allInnerTexts();
      await page.keyboard.press("Escape");
      if (attempt === 2) throw new Error(`the command palette does not offer “${title}”; it shows: ${JSON.stringify(shown)}`, { cause: err });
    }
  }
}

async function poll(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
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

/** The extension's output channel and the extension host log, for the artifacts. */
function findLogs(dir: string): string {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const entry of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (/Agent Bridge|exthost\.log/.test(entry.name)) out.push(`==> ${p}\n${fs.readFileSync(p, "utf8")}`);
    }
  };
  if (fs.existsSync(dir)) walk(dir);
  return out.join("\n");
}
