/**
 * The conversation webview in headless chromium, without VS Code (test/panelPage.ts): the real bundle, the
 * real document and CSP. The host is played by the test — it sends the messages the extension sends and
 * reads what the panel posts — to check what a person does in the panel: keys on permission cards, file
 * links, copy buttons, @-mentions, Send waiting for the session. Needs E2E_CHROMIUM and a built out/webview.js.
 */
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { type Browser, chromium } from "playwright-core";
import type { FromWebview } from "../../src/panel/messages";
import type { PanelAction } from "../../src/panel/state";
import { openPanel, type PanelPage } from "../panelPage";

const executablePath = process.env.E2E_CHROMIUM ?? "/usr/bin/chromium";
const ready: PanelAction[] = [
  { type: "connection", status: "ready" },
  { type: "sessionStarted", sessionId: "s1" },
];
const say = (text: string): PanelAction => ({ type: "update", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } } });
const options = [
  { optionId: "allow_once", name: "Allow once", kind: "allow_once" as const },
  { optionId: "allow_always", name: "Always allow Bash(npm test *) (saved to settings.local.json)", kind: "allow_always" as const },
  { optionId: "reject_once", name: "Reject", kind: "reject_once" as const },
];
const ask = (id: string, command = "npm test", destructive = false): PanelAction => ({ type: "permissionRequested", permission: { id, title: `\`${command}\``, toolKind: "execute", options, hasDiff: false, destructive } });

describe("the panel in chromium", () => {
  let browser: Browser;
  let panel: PanelPage;

  const act = async (...actions: PanelAction[]): Promise<void> => {
    for (const action of actions) await panel.send({ type: "action", action });
  };
  /** The first posted message of `type` (after `skip` of them) that the panel sends within 5 s. */
  const posted = async <T extends FromWebview["type"]>(type: T, skip = 0): Promise<Extract<FromWebview, { type: T }>> => {
    const deadline = Date.now() + 5000;
    for (;;) {
      const found = (await panel.posted()).filter((m): m is Extract<FromWebview, { type: T }> => m.type === type);
      if (found.length > skip) return found[skip] as Extract<FromWebview, { type: T }>;
      if (Date.now() > deadline) throw new Error(`the panel posted no ${type} (posted: ${JSON.stringify(await panel.posted())})`);
      await new Promise((r) => setTimeout(r, 30));
    }
  };
  const count = async (type: FromWebview["type"]): Promise<number> => (await panel.posted()).filter((m) => m.type === type).length;

  before(async () => {
    browser = await chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
  });
  after(async () => {
    await browser.close();
  });
  beforeEach(async () => {
    panel = await openPanel(browser, { theme: "dark" });
  });

  it("a blank panel welcomes, with the key and offline commands as buttons", async () => {
    const { page } = panel;
    await page.locator("#welcome").waitFor();
    await page.locator("#welcome button", { hasText: "Try it offline" }).click();
    assert.deepEqual(await posted("command"), { type: "command", command: "agentBridge.tryOffline" });
    await page.locator("#welcome button", { hasText: "Set API key" }).click();
    assert.deepEqual(await posted("command", 1), { type: "command", command: "agentBridge.setApiKey" });
    await act(...ready, { type: "turnStarted", turnId: 1, text: "hi", attachments: [] });
    await page.locator("#welcome").waitFor({ state: "hidden" });
    await panel.send({ type: "model", model: "claude-sonnet-4-5" });
    await page.locator("#model", { hasText: "claude-sonnet-4-5" }).click();
    assert.deepEqual(await posted("command", 2), { type: "command", command: "agentBridge.selectModel" });
    assert.deepEqual(panel.violations, []);
  });

  it("Send waits for the session: the text stays in the input until it can go", async () => {
    const { page } = panel;
    await act({ type: "connection", status: "ready" });
    await page.locator("#input").fill("first prompt");
    await page.locator("#input").press("Enter");
    assert.equal(await page.locator("#send").isDisabled(), true);
    assert.match((await page.locator("#connection").textContent()) ?? "", /starting a session/);
    await act({ type: "sessionStarted", sessionId: "s1" });
    await page.locator("#send:not([disabled])").waitFor();
    assert.equal(await page.locator("#input").inputValue(), "first prompt", "nothing was lost");
    assert.equal(await count("submit"), 0);
    // The host's word wins over the state's: a session being reloaded is not ready.
    await panel.send({ type: "sessionState", ready: false });
    await page.locator("#send[disabled]").waitFor();
    await panel.send({ type: "sessionState", ready: true });
    await page.locator("#input").press("Enter");
    assert.deepEqual(await posted("submit"), { type: "submit", text: "first prompt", attachContext: false });
    assert.equal(await page.locator("#input").inputValue(), "");
  });

  it("permission keys: digits answer the newest card, Escape rejects it (not the turn), typing in the input answers nothing", async () => {
    const { page } = panel;
    await act(...ready, { type: "turnStarted", turnId: 1, text: "t", attachments: [] }, { type: "phase", phase: "running" }, ask("p1"));
    const card = page.locator(".item.permission.pending");
    await card.waitFor();
    // Allow once is the first, primary button.
    assert.match((await card.locator("button.option").first().getAttribute("class")) ?? "", /allow_once primary/);
    await page.locator("#input").fill("");
    await page.locator("#input").press("2");
    assert.equal(await page.locator("#input").inputValue(), "2", "the digit went into the input");
    assert.equal(await count("permission"), 0);
    await page.locator("#log").click({ position: { x: 5, y: 5 } });
    await page.keyboard.press("2");
    assert.deepEqual(await posted("permission"), { type: "permission", id: "p1", optionId: "reject_once" });
    await act({ type: "permissionSettled", id: "p1", how: "answered", optionName: "Reject" }, ask("p2"));
    await page.locator('.item.permission.pending[data-id="p2"]').waitFor();
    await page.locator('.item.permission.pending[data-id="p2"] input.feedback').fill("use pytest instead");
    await page.keyboard.press("Escape");
    assert.deepEqual(await posted("permission", 1), { type: "permission", id: "p2", optionId: "reject_once", feedback: "use pytest instead" });
    assert.equal(await count("cancel"), 0, "Escape on a card does not cancel the turn");
    await act({ type: "permissionSettled", id: "p2", how: "answered", optionName: "Reject" });
    await page.locator("#input").press("Escape");
    await posted("cancel");
  });

  it("a destructive command: no always option up front, a warning; a new card takes the keyboard", async () => {
    const { page } = panel;
    await act(...ready, { type: "turnStarted", turnId: 1, text: "t", attachments: [] }, { type: "phase", phase: "running" }, ask("p1", "rm -rf build", true));
    const card = page.locator(".item.permission.pending.destructive");
    await card.waitFor();
    assert.equal(await card.locator("button.allow_always").isVisible(), false);
    assert.match(await card.innerText(), /deletes or overwrites/);
    await page.keyboard.press("1");
    assert.deepEqual(await posted("permission"), { type: "permission", id: "p1", optionId: "allow_once" });
  });

  it("code blocks copy through the host; file links open at the line once the host says the file exists", async () => {
    const { page } = panel;
    await panel.send({ type: "workspace", folders: ["/w"] });
    await act(...ready, { type: "turnStarted", turnId: 1, text: "t", attachments: [{ label: "a.py:3-4", path: "/w/a.py", line: 3 }] });
    await act(say("Look at src/app.ts:12 and `nope/x.ts`.\n\n```py\nprint('hi')\n```\n"));
    await page.locator(".code-block button.copy-code").click();
    assert.deepEqual(await posted("copy"), { type: "copy", text: "print('hi')\n" });
    await page.locator("button.copy-code", { hasText: "Copied" }).waitFor();
    const check = await posted("checkPaths");
    assert.deepEqual([...check.paths].sort(), ["nope/x.ts", "src/app.ts"]);
    await panel.send({ type: "paths", status: { "src/app.ts": "exists", "nope/x.ts": "missing" } });
    await page.locator('a.file-link[data-path="src/app.ts"][data-line="12"]').click();
    assert.deepEqual(await posted("openFile"), { type: "openFile", path: "src/app.ts", line: 12 });
    assert.equal(await page.locator('.md [data-path="nope/x.ts"]').count(), 0, "a missing path is plain text");
    await page.locator("a.file-link.chip").click();
    assert.deepEqual(await posted("openFile", 1), { type: "openFile", path: "/w/a.py", line: 3 });
    await panel.send({ type: "fileNotFound", path: "/w/a.py" });
    await page.locator("#toast", { hasText: "Not found: /w/a.py" }).waitFor();
    assert.deepEqual(panel.violations, []);
  });

  it("@-mentions: the host's matches in a list, ↓ and Enter insert one, the prompt carries it", async () => {
    const { page } = panel;
    await act(...ready);
    await page.locator("#input").click();
    await page.keyboard.type("explain @pa");
    const find = await posted("findFiles");
    assert.equal(find.query, "pa");
    await panel.send({ type: "files", requestId: find.requestId, files: [{ path: "src/parser.ts" }, { path: "src/paths.ts" }] });
    await page.locator("#mentions li.selected", { hasText: "parser.ts" }).waitFor();
    await page.keyboard.press("ArrowDown");
    await page.locator("#mentions li.selected", { hasText: "paths.ts" }).waitFor();
    await page.keyboard.press("Enter");
    assert.equal(await page.locator("#input").inputValue(), "explain @src/paths.ts ");
    assert.equal(await page.locator("#mentions").isHidden(), true);
    await page.keyboard.type("please");
    await page.keyboard.press("Enter");
    assert.deepEqual(await posted("submit"), { type: "submit", text: "explain @src/paths.ts please", attachContext: false, mentions: ["src/paths.ts"] });
  });

  it("the problems box attaches the active file's diagnostics", async () => {
    const { page } = panel;
    await act(...ready);
    await panel.send({ type: "context", label: "a.py", problems: 2 });
    await page.locator("#problems-label", { hasText: "Problems (2)" }).click();
    await page.locator("#input").fill("fix these");
    await page.locator("#input").press("Enter");
    assert.deepEqual(await posted("submit"), { type: "submit", text: "fix these", attachContext: false, attachProblems: true });
  });

  it("a message that interrupts a turn lands below the turn's cancelled line", async () => {
    const { page } = panel;
    await act(...ready, { type: "turnStarted", turnId: 1, text: "first", attachments: [] }, say("partial"), { type: "turnStarted", turnId: 2, text: "second", attachments: [] }, { type: "turnEnded", turnId: 1, stopReason: "cancelled" });
    await page.locator(".item.turnEnd").waitFor();
    const order = await page.locator("#log > .item").evaluateAll((els: Element[]) => els.map((e) => e.classList.item(1) ?? ""));
    assert.deepEqual(order, ["user", "agent", "turnEnd", "user"]);
  });
});
