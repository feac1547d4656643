/**
 * The conversation webview in headless chromium, without VS Code (test/panelPage.ts): the real bundle, the
 * real document and CSP. The host is played by the test — it sends the messages the extension sends and
 * reads what the panel posts — to check what a person does in the panel: keys on permission cards, file
 * links, copy buttons, @-mentions, Send waiting for the session. Needs E2E_CHROMIUM and a built out/webview.js.
 */
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { type Browser, chromium, type Locator } from "playwright-core";
import type { FromWebview } from "../../src/panel/messages";
import type { PanelAction } from "../../src/panel/state";
import { openPanel, type PanelPage } from "../panelPage";
import { poll } from "../poll";

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
/** A question's answers wait a moment after it shows (CARD_ARMING_MS): its first key's button enabled. */
const armed = async (card: Locator): Promise<void> => card.locator('button[data-key="1"]:enabled').first().waitFor();
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
    await panel.send({ type: "sessionState", ready: false, needsKey: true });
    await page.locator("#welcome button", { hasText: "Try it offline" }).click();
    assert.deepEqual(await posted("command"), { type: "command", command: "agentBridge.tryOffline" });
    await page.locator("#welcome-key button", { hasText: "Set API key" }).click();
    assert.deepEqual(await posted("command", 1), { type: "command", command: "agentBridge.setApiKey" });
    await act(...ready, { type: "turnStarted", turnId: 1, text: "hi", attachments: [] });
    await page.locator("#welcome").waitFor({ state: "hidden" });
    await panel.send({ type: "model", model: "claude-sonnet-4-5" });
    await page.locator("#model", { hasText: "claude-sonnet-4-5" }).click();
    assert.deepEqual(await posted("command", 2), { type: "command", command: "agentBridge.selectModel" });
    assert.deepEqual(panel.violations, []);
  });

  it("the welcome's buttons fit the state: key and offline without a key, how to use the demo on it, none with a key", async () => {
    const { page } = panel;
    const visible = async (): Promise<string[]> => page.evaluate(() => ["welcome-key", "welcome-offline"].filter((id) => !(document.getElementById(id) as HTMLElement).hidden));
    await page.locator("#welcome").waitFor();
    await panel.send({ type: "sessionState", ready: true, needsKey: false });
    await poll("no key offer with a key", async () => (await visible()).length === 0, 5000);
    await panel.send({ type: "sessionState", ready: true, needsKey: true });
    await poll("the key offer without one", async () => (await visible()).join() === "welcome-key", 5000);
    // "Try it offline": the session runs on the demo model; no "Try it offline" button for what already runs.
    await panel.send({ type: "sessionState", ready: true, needsKey: false });
    await panel.send({ type: "model", model: "Offline demo model", modelId: "offline-demo" });
    await poll("the demo's hint", async () => (await visible()).join() === "welcome-offline", 5000);
    assert.match(await page.locator("#welcome-offline").innerText(), /type tour/);
    assert.equal(await page.locator("#welcome button:visible", { hasText: "Try it offline" }).count(), 0);
    await page.locator("#welcome-offline button", { hasText: "Set API key" }).click();
    assert.deepEqual(await posted("command"), { type: "command", command: "agentBridge.setApiKey" });
    await panel.send({ type: "model", model: "Claude Sonnet 4.5", modelId: "claude-sonnet-4-5" });
    await poll("back on Claude with a key: no offer", async () => (await visible()).length === 0, 5000);
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
    // Enter right after the host says ready, in the same task, before any frame draws the button (CI once
    // pressed it in that window and the key was dropped): the state decides, so the prompt goes.
    await page.evaluate(() => {
      window.dispatchEvent(new MessageEvent("message", { data: { type: "sessionState", ready: true } }));
      document.querySelector("#input")?.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true, cancelable: true }));
    });
    assert.deepEqual(await posted("submit"), { type: "submit", text: "first prompt", attachContext: false });
    assert.equal(await page.locator("#input").inputValue(), "");
    await page.locator("#send:not([disabled])").waitFor();
    // And the other way: not ready in the same task, before the button is drawn disabled: nothing goes.
    await page.locator("#input").fill("second prompt");
    await page.evaluate(() => {
      window.dispatchEvent(new MessageEvent("message", { data: { type: "sessionState", ready: false } }));
      document.querySelector("#input")?.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true, cancelable: true }));
    });
    await page.locator("#send[disabled]").waitFor();
    assert.equal(await count("submit"), 1);
    assert.equal(await page.locator("#input").inputValue(), "second prompt", "nothing was lost");
  });

  it("permission keys: digits answer the newest card, Escape rejects it (not the turn), typing in the input answers nothing", async () => {
    const { page } = panel;
    await act(...ready, { type: "turnStarted", turnId: 1, text: "t", attachments: [] }, { type: "phase", phase: "running" }, ask("p1"));
    const card = page.locator(".item.permission.pending");
    await card.waitFor();
    // Allow once is the first, primary button.
    assert.match((await card.locator("button.option").first().getAttribute("class")) ?? "", /allow_once primary/);
    // Writing in the input (issue 24 item 6: an empty, idle input no longer keeps the card's keys; see below).
    await page.locator("#input").fill("");
    await page.locator("#input").press("x");
    await page.locator("#input").press("2");
    assert.equal(await page.locator("#input").inputValue(), "x2", "the digit went into the input");
    assert.equal(await count("permission"), 0);
    await page.locator("#log").click({ position: { x: 5, y: 5 } });
    await armed(card);
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

  it("a question's answers wait a moment after it shows: a key or a click that very moment answers nothing", async () => {
    const { page } = panel;
    await act(...ready, { type: "turnStarted", turnId: 1, text: "t", attachments: [] }, { type: "phase", phase: "running" });
    // Looked at the moment the card is in the log (a mutation observer runs before anything else can): its answer
    // buttons are disabled, and its digit, pressed then, posts nothing.
    await page.evaluate(() => {
      const w = window as unknown as { __arming?: { disabled: boolean; posted: number } };
      const before = (window as unknown as { __posted: { type: string }[] }).__posted.length;
      const observer = new MutationObserver(() => {
        const card = document.querySelector<HTMLElement>(".item.permission.pending");
        if (!card || w.__arming) return;
        observer.disconnect();
        const button = card.querySelector<HTMLButtonElement>('button[data-key="1"]');
        const disabled = button?.disabled ?? false;
        card.dispatchEvent(new KeyboardEvent("keydown", { key: "1", bubbles: true, cancelable: true }));
        button?.click();
        const posted = (window as unknown as { __posted: { type: string }[] }).__posted.slice(before);
        w.__arming = { disabled, posted: posted.filter((m) => m.type === "permission").length };
      });
      observer.observe(document.querySelector("#log") as Node, { childList: true, subtree: true });
    });
    await act(ask("p1"));
    await poll("the card seen", async () => Boolean(await page.evaluate(() => (window as unknown as { __arming?: unknown }).__arming)));
    assert.deepEqual(await page.evaluate(() => (window as unknown as { __arming?: unknown }).__arming), { disabled: true, posted: 0 });
    const card = page.locator(".item.permission.pending");
    await armed(card);
    await card.locator('button[data-key="1"]').click();
    assert.deepEqual(await posted("permission"), { type: "permission", id: "p1", optionId: "allow_once" });
  });

  it("a card the log moves answers only a moment later again (what was under the pointer is now the card)", async () => {
    const { page } = panel;
    await act(...ready, { type: "turnStarted", turnId: 1, text: "t", attachments: [] }, { type: "phase", phase: "running" }, ask("p1"));
    const card = page.locator(".item.permission.pending");
    await armed(card);
    await page.evaluate(() => {
      const w = window as unknown as { __rearmed?: boolean };
      const button = document.querySelector<HTMLButtonElement>('.item.permission.pending button[data-key="1"]');
      w.__rearmed = false;
      if (button) new MutationObserver(() => (w.__rearmed ||= button.disabled)).observe(button, { attributes: true, attributeFilter: ["disabled"] });
    });
    // Text comes below the card, the log follows it to the bottom: the card moves up under the pointer.
    await act(say(Array.from({ length: 80 }, (_, i) => `line ${i}`).join("\n\n")));
    await poll("the moved card's answers to wait again", async () => Boolean(await page.evaluate(() => (window as unknown as { __rearmed?: boolean }).__rearmed)));
    await armed(card);
    await card.locator('button[data-key="1"]').click();
    assert.deepEqual(await posted("permission"), { type: "permission", id: "p1", optionId: "allow_once" });
  });

  it("a destructive command: no always option up front, a warning; a new card takes the keyboard", async () => {
    const { page } = panel;
    await act(...ready, { type: "turnStarted", turnId: 1, text: "t", attachments: [] }, { type: "phase", phase: "running" }, ask("p1", "rm -rf build", true));
    const card = page.locator(".item.permission.pending.destructive");
    await card.waitFor();
    assert.equal(await card.locator("button.allow_always").isVisible(), false);
    assert.match(await card.innerText(), /deletes or overwrites/);
    await armed(card);
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

  it("code blocks wrap long lines at the panel's width; Wrap turns that off for every block, and the choice is kept", async () => {
    // A block that scrolls sideways is a scroller of its own, and a panel full of them costs every keystroke's frame
    // while an answer streams (scripts/bench-render: p95 18.5-20.5 ms against 12.7-14.7 ms wrapped, issue 24).
    const long = (n: number): string => `\`\`\`ts\nconst line${n} = [${Array.from({ length: 30 }, (_, i) => `"item-${i}"`).join(", ")}];\n\`\`\`\n\n`;
    const blocks = (p: PanelPage) =>
      p.page.evaluate(() =>
        [...document.querySelectorAll<HTMLElement>(".code-block pre")].map((pre) => ({ sideways: pre.scrollWidth > pre.clientWidth + 1, lines: Math.round(pre.getBoundingClientRect().height) })),
      );
    const narrow = await openPanel(browser, { theme: "dark", width: 300 });
    let reopened: PanelPage | undefined;
    try {
      for (const action of [...ready, { type: "turnStarted", turnId: 1, text: "t", attachments: [] }, say(long(1)), say(long(2))] as PanelAction[]) await narrow.send({ type: "action", action });
      await narrow.page.locator(".code-block pre", { hasText: "line2" }).waitFor();
      const wrapped = await blocks(narrow);
      assert.equal(wrapped.length, 2);
      assert.ok(wrapped.every((b) => !b.sideways), `wrapped: nothing to scroll sideways ${JSON.stringify(wrapped)}`);
      await narrow.page.locator(".code-block button.wrap-code").first().click();
      await poll("every block to scroll sideways", async () => (await blocks(narrow)).every((b) => b.sideways), 5000, 30);
      assert.ok((await blocks(narrow)).every((b, i) => b.lines < (wrapped[i]?.lines ?? 0)), "unwrapped blocks are shorter");
      await narrow.send({ type: "action", action: say(long(3)) });
      await narrow.page.locator(".code-block pre", { hasText: "line3" }).waitFor();
      assert.ok((await blocks(narrow)).every((b) => b.sideways), "a block that comes later follows the choice");
      assert.equal(await narrow.page.locator('.code-block button.wrap-code[aria-pressed="true"]').count(), 0);
      const state = await narrow.page.evaluate(() => (window as unknown as { __state: unknown }).__state);
      reopened = await openPanel(browser, { theme: "dark", width: 300, state });
      for (const action of [...ready, { type: "turnStarted", turnId: 1, text: "t", attachments: [] }, say(long(4))] as PanelAction[]) await reopened.send({ type: "action", action });
      await reopened.page.locator(".code-block pre", { hasText: "line4" }).waitFor();
      assert.ok((await blocks(reopened)).every((b) => b.sideways), "the panel restored with its state keeps the choice");
      await reopened.page.locator(".code-block button.wrap-code").click();
      await poll("the block to wrap again", async () => (await blocks(reopened as PanelPage)).every((b) => !b.sideways), 5000, 30);
      assert.equal(await reopened.page.locator('.code-block button.wrap-code[aria-pressed="true"]').count(), 1);
    } finally {
      await narrow.page.close();
      await reopened?.page.close();
    }
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

  it("a question card takes the keyboard: with the input focused and empty, its digits answer it (issue 24 item 6)", async () => {
    const { page } = panel;
    await act(...ready, { type: "turnStarted", turnId: 1, text: "t", attachments: [] }, { type: "phase", phase: "running" });
    await page.locator("#input").click();
    // Nothing typed: the card that comes takes the focus, and 1 answers it.
    await act(ask("p1"));
    await page.locator(".item.permission.pending:focus").waitFor();
    await armed(page.locator(".item.permission.pending"));
    await page.keyboard.press("1");
    assert.deepEqual(await posted("permission"), { type: "permission", id: "p1", optionId: "allow_once" });
    assert.equal(await page.locator("#input").inputValue(), "", "the digit did not go into the prompt");
    // While the person is writing, a new card waits: their keys go on into the input.
    await act({ type: "permissionSettled", id: "p1", how: "answered", optionName: "Allow once" });
    await page.locator("#input").click();
    await page.keyboard.type("npm ");
    await act(ask("p2"));
    await page.locator('.item.permission.pending[data-id="p2"]').waitFor();
    await page.keyboard.type("1");
    assert.equal(await page.locator("#input").inputValue(), "npm 1");
    assert.equal(await count("permission"), 1);
  });

  it("Bypass permissions shows a banner with the way back; the modes list says what each mode does (issue 24 item 7)", async () => {
    const { page } = panel;
    const modes = {
      currentModeId: "default",
      availableModes: [
        { id: "default", name: "Default", description: "Ask before anything that is not read-only" },
        { id: "bypassPermissions", name: "Bypass permissions", description: "Run everything without asking" },
      ],
    };
    await act({ type: "connection", status: "ready" }, { type: "sessionStarted", sessionId: "s1", modes });
    await page.locator("#mode-desc", { hasText: "Default: Ask before anything that is not read-only" }).waitFor();
    assert.equal(await page.locator('#mode option[value="bypassPermissions"]').getAttribute("title"), "Run everything without asking");
    assert.equal(await page.locator("#bypass").isHidden(), true);
    await act({ type: "update", update: { sessionUpdate: "current_mode_update", currentModeId: "bypassPermissions" } });
    await page.locator("#bypass:not([hidden])", { hasText: "every command, edit and deletion runs without asking" }).waitFor();
    await page.locator("#bypass button", { hasText: "Back to Default" }).click();
    assert.deepEqual(await posted("setMode"), { type: "setMode", modeId: "default" });
  });

  it("a narrow sidebar: the mode picker fits, table words stay whole, a retry's status is not cut (issue 24 item 10)", async () => {
    const narrow = await openPanel(browser, { theme: "dark", width: 230 });
    try {
      const modes = { currentModeId: "acceptEdits", availableModes: [{ id: "acceptEdits", name: "Accept edits (the agent edits the workspace without asking)" }] };
      const retry = { reason: "API overloaded", attempt: 2, attempts: 4, delayMs: 30000 };
      for (const action of [
        ...ready.slice(0, 1),
        { type: "sessionStarted", sessionId: "s1", modes },
        { type: "turnStarted", turnId: 1, text: "t", attachments: [] },
        { type: "phase", phase: "running" },
        say("| setting | meaning |\n|---|---|\n| internationalization | localization |\n"),
        { type: "update", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "> retry" }, _meta: { notice: "info", retry } } },
      ] as PanelAction[]) {
        await narrow.send({ type: "action", action });
      }
      await narrow.page.locator("td", { hasText: "internationalization" }).waitFor();
      const measured = await narrow.page.evaluate(() => {
        const width = document.documentElement.clientWidth;
        const td = [...document.querySelectorAll("td")].find((c) => c.textContent === "internationalization");
        const range = document.createRange();
        if (td) range.selectNodeContents(td);
        const status = document.getElementById("connection");
        return {
          width,
          overflow: document.documentElement.scrollWidth - width,
          mode: document.getElementById("mode")?.getBoundingClientRect().right ?? 0,
          lines: new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size,
          statusCut: status ? status.scrollWidth > status.clientWidth + 1 : true,
          status: status?.textContent ?? "",
        };
      });
      assert.ok(measured.mode <= measured.width, `the mode picker fits: ${JSON.stringify(measured)}`);
      assert.ok(measured.overflow <= 0, `nothing is wider than the panel: ${JSON.stringify(measured)}`);
      assert.equal(measured.lines, 1, "the word is on one line");
      assert.match(measured.status, /API overloaded — retrying in \d+ s \(attempt 2\/4\)/);
      assert.equal(measured.statusCut, false, `the whole status shows: ${JSON.stringify(measured)}`);
      await narrow.page.screenshot({ path: `${process.env.E2E_ARTIFACTS ?? "/tmp"}/panel-narrow.png` }).catch(() => undefined);
    } finally {
      await narrow.page.close();
    }
  });

  it("a stream that brings more than a screen at once is still followed: no '↓ Latest', the view at the bottom", async () => {
    // Each part lands off-screen at content-visibility's 40em placeholder, then takes its real height: the browser's
    // scroll anchoring moved the view, which let go of the stream (a fast answer, or a history replayed at once).
    const { page } = panel;
    const part = (i: number): string =>
      `### Part ${i}\n\nPart ${i} changes src/mod${i}.ts:${i + 1} and keeps ${"its words on one line, ".repeat(4)}\n\n- one\n- two\n\n\`\`\`ts\nexport const v${i} = ${i};\n\`\`\`\n\n`;
    await act(...ready, { type: "turnStarted", turnId: 1, text: "t", attachments: [] }, { type: "phase", phase: "running" });
    for (let i = 0; i < 120; i++) await act(say(part(i)));
    await act(say("The end.\n\n"));
    await page.locator(".md p", { hasText: "The end." }).waitFor();
    const view = () =>
      page.evaluate(() => {
        const log = document.getElementById("log") as HTMLElement;
        return { gap: log.scrollHeight - log.scrollTop - log.clientHeight, height: log.scrollHeight, jump: !(document.getElementById("jump") as HTMLElement).hidden };
      });
    const settled = (): Promise<unknown> => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r, 50)))));
    await settled();
    const end = await view();
    assert.ok(end.height > 10000, `many screens of answer: ${JSON.stringify(end)}`);
    assert.ok(end.gap < 2 && !end.jump, `still at the bottom, no '↓ Latest': ${JSON.stringify(end)}`);
  });

  it("a resize never unpins a panel that follows the stream: no '↓ Latest' after the sidebar narrows or widens, and one scrolled up stays put", async () => {
    const { page } = panel;
    const paragraph = (i: number): string => `Paragraph ${i}: ${"words that wrap differently at every width of the sidebar, ".repeat(5)}\n\n`;
    const code = "```ts\n" + Array.from({ length: 30 }, (_, i) => `const line${i} = "${"x".repeat(i * 3)}";`).join("\n") + "\n```\n\n";
    await act(...ready, { type: "turnStarted", turnId: 1, text: "hi", attachments: [] }, { type: "phase", phase: "running" });
    for (let i = 0; i < 40; i++) await act(say(paragraph(i) + (i % 8 === 0 ? code : "")));
    const view = (): Promise<{ gap: number; jump: boolean; scrollable: number }> =>
      page.evaluate(() => {
        const log = document.getElementById("log") as HTMLElement;
        const jump = document.getElementById("jump") as HTMLButtonElement;
        return { gap: log.scrollHeight - log.scrollTop - log.clientHeight, jump: !jump.hidden, scrollable: log.scrollHeight - log.clientHeight };
      });
    const settled = (): Promise<unknown> => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r, 50)))));
    await poll("the whole answer rendered", async () => ((await page.locator("#log").textContent()) ?? "").includes("Paragraph 39"), 10000);
    await poll("at the bottom", async () => (await view()).gap < 2, 5000);
    assert.ok((await view()).scrollable > 3000, "several screens of answer");
    for (const [width, height] of [[230, 760], [760, 760], [300, 500], [420, 900], [230, 400]] as const) {
      await page.setViewportSize({ width, height });
      await settled();
      for (const moment of ["idle", "streaming"]) {
        if (moment === "streaming") await act(say(`after the resize to ${width}\n\n`));
        await settled();
        const seen = await view();
        assert.equal(seen.jump, false, `no '↓ Latest' at ${width}x${height}, ${moment}: ${JSON.stringify(seen)}`);
        assert.ok(seen.gap < 2, `still at the bottom at ${width}x${height}, ${moment}: ${JSON.stringify(seen)}`);
      }
    }
    // the person scrolls up: the view stays where they put it, through a resize and more stream
    await page.mouse.move(100, 200);
    await page.mouse.wheel(0, -2500);
    await poll("'↓ Latest' once scrolled up", async () => (await view()).jump, 5000);
    await page.setViewportSize({ width: 420, height: 760 });
    await act(say("more\n\n"));
    await settled();
    const up = await view();
    assert.ok(up.jump && up.gap > 1000, `still scrolled up, '↓ Latest' shown: ${JSON.stringify(up)}`);
    await page.locator("#jump").click();
    await poll("back at the bottom", async () => (await view()).gap < 2 && !(await view()).jump, 5000);
  });

  it("the question's whole truth: every line of the command, the parts that made it ask marked, the reason, the resolved path (issue 21)", async () => {
    const { page } = panel;
    const command = "echo 'harmless' &&\nrm -f victim.txt";
    const start = Array.from(command).indexOf("r", command.indexOf("\n"));
    await act(...ready, { type: "turnStarted", turnId: 1, text: "t", attachments: [] }, {
      type: "permissionRequested",
      permission: {
        id: "q1",
        title: "echo 'harmless' && ⏎ rm -f victim.txt",
        toolKind: "execute",
        options,
        hasDiff: false,
        reason: "rm deletes files",
        question: { command, marks: [{ start, end: start + 16, why: "rm deletes files" }], reason: "rm deletes files", paths: [{ named: "victim.txt", resolved: "/home/u/.ssh/id_rsa" }], escaped: false },
      },
    });
    const card = page.locator(".item.permission.pending");
    await card.waitFor();
    assert.equal(await card.locator("pre.perm-command").innerText(), command, "the command, every line, nothing added");
    assert.match(await card.locator("ul.marks").innerText(), /rm -f victim\.txt: rm deletes files/);
    assert.equal(await card.locator("pre.perm-command mark").innerText(), "rm -f victim.txt");
    assert.equal(await card.locator("pre.perm-command mark").getAttribute("title"), "rm deletes files");
    assert.match(await card.locator(".perm-paths").innerText(), /victim\.txt → \/home\/u\/\.ssh\/id_rsa/);
    assert.equal(await card.locator(".perm-reason").count(), 0, "the reason is said once, in the legend");
    await page.screenshot({ path: `${process.env.E2E_ARTIFACTS ?? "/tmp"}/panel-question.png` }).catch(() => undefined);
  });

  it("tabs: each conversation is a tab; a click switches, × closes, + opens one; a tab keeps its draft", async () => {
    const { page } = panel;
    await act(...ready);
    const tabs = (active: string): { type: "tabs"; tabs: { id: string; title: string; active: boolean; phase: "idle" | "running"; waiting: boolean }[] } => ({
      type: "tabs",
      tabs: [
        { id: "c1", title: "fix the tests", active: active === "c1", phase: "running", waiting: true },
        { id: "c2", title: "explain the parser", active: active === "c2", phase: "idle", waiting: false },
      ],
    });
    await panel.send(tabs("c1"));
    await page.locator("#tabs .tab.active", { hasText: "fix the tests" }).waitFor();
    assert.equal(await page.locator("#tabs .tab-state.waiting").count(), 1, "a tab whose question waits says so");
    await page.locator("#input").fill("half a thought");
    await page.locator("#tabs .tab-title", { hasText: "explain the parser" }).click();
    assert.deepEqual(await posted("switchSession"), { type: "switchSession", id: "c2" });
    await panel.send(tabs("c2"));
    await poll("the other tab's (empty) draft", async () => (await page.locator("#input").inputValue()) === "", 5000);
    await panel.send(tabs("c1"));
    await poll("the first tab's draft back", async () => (await page.locator("#input").inputValue()) === "half a thought", 5000);
    await page.locator("#tabs .tab-close").last().click();
    assert.deepEqual(await posted("closeSession"), { type: "closeSession", id: "c2" });
    await page.locator("#tabs .tab-new").click();
    await posted("newSession");
  });

  it("the context meter: how full the context is and the session's cost, Compact one click away", async () => {
    const { page } = panel;
    await act(...ready, { type: "turnStarted", turnId: 1, text: "t", attachments: [] }, { type: "update", update: { sessionUpdate: "usage_update", used: 170000, size: 200000, cost: { amount: 0.4213, currency: "USD" } } });
    await page.locator("#meter:not([hidden]) .meter-text", { hasText: "85% · $0.4213" }).waitFor();
    assert.match((await page.locator("#meter").getAttribute("class")) ?? "", /high/);
    await page.locator("#compact").click();
    assert.deepEqual(await posted("compact"), { type: "compact" });
  });

});
