/**
 * One-off: captures the `--vscode-*` CSS variables that VS Code (code-server) gives a webview in each of the four
 * default themes, into bench/themes.json, so the render bench and the panel screenshots can show the panel as it
 * looks in VS Code without starting it. Run it again after a VS Code upgrade:
 *   eval "$(scripts/setup-vscode-e2e | grep -E '^E2E_' | sed 's/^/export /')"; npm run package
 *   node --import tsx bench/captureThemes.ts
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { chromium } from "playwright-core";

const themes = {
  dark: "Default Dark Modern",
  light: "Default Light Modern",
  "hc-dark": "Default High Contrast",
  "hc-light": "Default High Contrast Light",
} as const;

const env = (name: string): string => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (scripts/setup-vscode-e2e prints it)`);
  return v;
};

async function main(): Promise<void> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "ab-themes-"));
  const userData = path.join(root, "user-data");
  const workspace = path.join(root, "ws");
  fs.mkdirSync(path.join(userData, "User"), { recursive: true });
  fs.mkdirSync(workspace);
  const settingsFile = path.join(userData, "User/settings.json");
  const settings = (theme: string): string =>
    JSON.stringify({
      "workbench.colorTheme": theme,
      "chat.disableAIFeatures": true,
      "workbench.startupEditor": "none",
      "security.workspace.trust.enabled": false,
      "agentBridge.serverCommand": ["true"],
    });
  fs.writeFileSync(settingsFile, settings(themes.dark));
  const csEnv = { ...process.env, PATH: `${env("E2E_NODE_BIN")}:${process.env.PATH ?? ""}`, XDG_CONFIG_HOME: path.join(root, "xdg") };
  const cs = env("E2E_CODE_SERVER");
  const common = ["--user-data-dir", userData, "--extensions-dir", path.join(root, "ext"), "--config", path.join(root, "config.yaml")];
  fs.writeFileSync(path.join(root, "config.yaml"), "auth: none\n");
  execFileSync(cs, [...common, "--install-extension", path.resolve(__dirname, "../out/agent-bridge.vsix")], { env: csEnv, stdio: "pipe" });
  const port = await freePort();
  let server: ChildProcess | undefined;
  const browser = await chromium.launch({ executablePath: env("E2E_CHROMIUM"), args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
  try {
    server = spawn("setsid", [cs, ...common, "--bind-addr", `127.0.0.1:${port}`, "--auth", "none", "--disable-telemetry", workspace], { env: csEnv, stdio: "ignore" });
    const deadline = Date.now() + 60000;
    while ((await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.ok !== true) {
      if (Date.now() > deadline) throw new Error("code-server did not start");
      await new Promise((r) => setTimeout(r, 200));
    }
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
    await page.locator(".monaco-workbench").waitFor({ timeout: 60000 });
    await page.locator('.activitybar [aria-label^="Agent Bridge"]').first().click();
    const panel = page.locator("iframe.webview").first().contentFrame().locator("iframe#active-frame").contentFrame();
    await panel.locator("#log").waitFor({ timeout: 60000 });
    const out: Record<string, { bodyClass: string; style: string }> = {};
    for (const [key, name] of Object.entries(themes)) {
      if (key !== "dark") {
        // code-server reads the user settings again on a reload.
        fs.writeFileSync(settingsFile, settings(name));
        await page.reload();
        await page.locator(".monaco-workbench").waitFor({ timeout: 60000 });
        await page.locator('.activitybar [aria-label^="Agent Bridge"]').first().click();
        await panel.locator("#log").waitFor({ timeout: 60000 });
      }
      const want = { dark: "vscode-dark", light: "vscode-light", "hc-dark": "vscode-high-contrast", "hc-light": "vscode-high-contrast-light" }[key] ?? "";
      const deadline2 = Date.now() + 30000;
      for (;;) {
        const cls = (await panel.locator("body").getAttribute("class")) ?? "";
        if (cls.split(/\s+/).includes(want)) break;
        if (Date.now() > deadline2) throw new Error(`theme ${name} did not apply (body class ${cls})`);
        await new Promise((r) => setTimeout(r, 200));
      }
      await new Promise((r) => setTimeout(r, 500));
      out[key] = { bodyClass: (await panel.locator("body").getAttribute("class")) ?? "", style: (await panel.locator("html").getAttribute("style")) ?? "" };
      console.log(`${key}: ${out[key].style.length} chars of variables`);
    }
    fs.writeFileSync(path.join(__dirname, "themes.json"), JSON.stringify(out, null, 1) + "\n");
  } finally {
    await browser.close();
    if (server?.pid) process.kill(-server.pid, "SIGKILL");
    fs.rmSync(root, { recursive: true, force: true });
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, "127.0.0.1", () => {
      const a = srv.address();
      srv.close(() => (typeof a === "object" && a ? resolve(a.port) : reject(new Error("no port"))));
    });
  });
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
