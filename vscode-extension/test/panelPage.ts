/**
 * The conversation panel in headless chromium without VS Code: the real webview bundle and stylesheet in the
 * real document (src/panel/html.ts, strict CSP), one of the four captured themes (bench/themes.json), and a
 * fake `acquireVsCodeApi` whose messages are kept in `window.__posted`. For the render bench and screenshots.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import type { Browser, Page } from "playwright-core";
import type { FromWebview, ToWebview } from "../src/panel/messages";
import { panelHtml } from "../src/panel/html";

export const origin = "https://panel.test";
const root = path.resolve(__dirname, "..");
export type Theme = "dark" | "light" | "hc-dark" | "hc-light";
export const themes: Theme[] = ["dark", "light", "hc-dark", "hc-light"];

const themeVars = JSON.parse(fs.readFileSync(path.join(root, "bench/themes.json"), "utf8")) as Record<Theme, { bodyClass: string; style: string }>;

export interface PanelPage {
  page: Page;
  /** Delivers a host message to the webview, as `webview.postMessage` does. */
  send(message: ToWebview): Promise<void>;
  /** What the webview posted to the host so far. */
  posted(): Promise<FromWebview[]>;
  /** CSP violations the page reported (must stay empty). */
  violations: string[];
}

export interface PanelOptions {
  theme: Theme;
  width?: number;
  height?: number;
  extraFiles?: Record<string, string>;
  extraCsp?: string[];
  /** What `getState()` gives the webview at its start, as VS Code restores a webview's state. */
  state?: unknown;
  /** Another bundle and stylesheet (paths under the extension), e.g. an older build to compare with. */
  script?: string;
  style?: string;
}

export async function openPanel(browser: Browser, opts: PanelOptions): Promise<PanelPage> {
  const page = await browser.newPage({ viewport: { width: opts.width ?? 420, height: opts.height ?? 760 } });
  const violations: string[] = [];
  page.on("console", (m) => {
    if (/Content.Security.Policy|Refused to/i.test(m.text())) violations.push(m.text());
  });
  page.on("pageerror", (e) => violations.push(`page error: ${e.message}`));
  if (process.env.PANEL_DEBUG) page.on("console", (m) => console.log("[panel]", m.text()));
  if (process.env.PANEL_DEBUG) page.on("pageerror", (e) => console.log("[panel error]", e.message));
  if (process.env.PANEL_DEBUG) page.on("requestfailed", (r) => console.log("[panel failed]", r.url()));
  await page.route(`${origin}/**`, async (route) => {
    const url = new URL(route.request().url());
    if (url.pathname === "/index.html") {
      const html = panelHtml({
        cspSource: origin,
        nonce: "bench-nonce-0123456789",
        scriptUri: `${origin}/${opts.script ?? "out/webview.js"}`,
        styleUri: `${origin}/${opts.style ?? "media/panel.css"}`,
        extraCsp: opts.extraCsp,
      });
      return route.fulfill({ contentType: "text/html", body: html });
    }
    const extra = opts.extraFiles?.[url.pathname];
    if (extra !== undefined) return route.fulfill({ contentType: "text/javascript", body: extra });
    const file = path.join(root, url.pathname);
    if (!file.startsWith(root + path.sep) || !fs.existsSync(file)) return route.fulfill({ status: 404, body: "" });
    const type = file.endsWith(".css") ? "text/css" : file.endsWith(".js") ? "text/javascript" : "application/octet-stream";
    return route.fulfill({ contentType: type, body: fs.readFileSync(file) });
  });
  const theme = themeVars[opts.theme];
  // tsx compiles the functions handed to the page with esbuild's keepNames: they call a `__name` helper.
  await page.addInitScript({ content: "window.__name = (f) => f;" });
  await page.addInitScript(
    ({ style, bodyClass, state }) => {
      const w = window as unknown as { __posted: unknown[]; __state: unknown; acquireVsCodeApi: () => unknown };
      w.__posted = [];
      w.__state = state ?? undefined;
      w.acquireVsCodeApi = () => ({
        postMessage: (m: unknown) => w.__posted.push(m),
        getState: () => w.__state,
        setState: (s: unknown) => {
          w.__state = s;
        },
      });
      // As VS Code does: the theme's variables on <html> (through the CSSOM, which the CSP allows), its kind on <body>.
      document.addEventListener("DOMContentLoaded", () => {
        for (const decl of style.split(";")) {
          const i = decl.indexOf(":");
          if (i > 0) document.documentElement.style.setProperty(decl.slice(0, i).trim(), decl.slice(i + 1).trim());
        }
        document.body.className = bodyClass;
      });
      document.addEventListener("securitypolicyviolation", (e) => console.error(`Refused to ${e.violatedDirective}: ${e.blockedURI}`));
    },
    { style: theme.style, bodyClass: theme.bodyClass, state: opts.state ?? null },
  );
  await page.goto(`${origin}/index.html`);
  await page.waitForFunction(() => (window as unknown as { __posted: { type: string }[] }).__posted.some((m) => m.type === "ready"));
  return {
    page,
    violations,
    send: async (message) => {
      await page.evaluate((m) => window.dispatchEvent(new MessageEvent("message", { data: m })), message as unknown);
    },
    posted: () => page.evaluate(() => (window as unknown as { __posted: FromWebview[] }).__posted),
  };
}
