/**
 * Issue 24 item 2 in a real VS Code (code-server + headless chromium, the packaged .vsix, the offline model):
 * accepting an edited proposal must leave nothing behind — no tab of the proposal (diff, or one side alone), no
 * editor with unsaved changes that cannot be saved, no "Failed to save … NoPermissions" — and the file on disk is
 * what was accepted. Each variant proposes an edit to a file of its own (Read, then Edit: the scenario below),
 * and is answered a different way: edited then accepted at once, accepted while the diff is still opening, the
 * real file open in an editor, the real file open with unsaved edits of its own, keys typed into the proposal
 * after Accept, and the proposal's editor opened again after it closed.
 * Needs E2E_NODE_BIN, E2E_CODE_SERVER, E2E_CHROMIUM (printed by scripts/setup-vscode-e2e).
 */
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import type { FrameLocator, Locator, Page } from "playwright-core";
import { poll } from "../poll";
import { type CodeServer, openPanel, startCodeServer } from "./codeServer";

const repo = path.resolve(__dirname, "../../..");
const shots = path.join(process.env.E2E_ARTIFACTS ?? path.join(repo, ".artifacts/vscode-e2e"), "proposal");

/** The variants' files, each `def fN():\n    return N\n` before; the agent proposes `return N * 10`. */
const variants = ["quick", "opening", "open", "dirty", "reopen", "typedafter"] as const;
const original = (n: number): string => `def f${n}():\n    return ${n}\n`;
const proposed = (n: number): string => `def f${n}():\n    return ${n} * 10\n`;

function scenario(workspace: string): string {
  const responses = variants.flatMap((name, n) => {
    const file = `${workspace}/${name}.py`;
    return [
      { content: [{ type: "tool_use", name: "Read", input: { file_path: file } }], stop_reason: "tool_use" },
      { content: [{ type: "tool_use", name: "Edit", input: { file_path: file, old_string: `return ${n}`, new_string: `return ${n} * 10` } }], stop_reason: "tool_use" },
      { content: [{ type: "text", text: `Edited ${name}.py.` }], stop_reason: "end_turn" },
    ];
  });
  return JSON.stringify({ name: "proposals", after_last: "end_turn_text", responses });
}

describe("accepting a proposed edit leaves no phantom tab (issue 24 item 2)", () => {
  let cs: CodeServer;
  let page: Page;
  let panel: FrameLocator;
  const file = (name: string): string => path.join(cs.workspace, `${name}.py`);

  const shot = async (name: string): Promise<void> => {
    await page.screenshot({ path: path.join(shots, `${name}.png`) });
  };
  const turnEnds = (): Promise<number> => panel.locator(".item.turnEnd").count();
  const diffTabs = (): Locator => page.locator(".tabs-container .tab", { hasText: "proposed edit" });
  const modified = (): Locator => page.locator(".editor-instance .monaco-diff-editor .editor.modified");
  /** Asks for the next variant's edit; resolves once its question is in the panel. */
  const ask = async (name: string): Promise<string> => {
    await panel.locator("#send:not([disabled])").waitFor({ timeout: 60000 });
    await panel.locator("#input").fill(`edit ${name}.py`);
    await panel.locator("#input").press("Enter");
    const card = panel.locator(".item.permission.pending", { hasText: `${name}.py` });
    await card.waitFor({ timeout: 30000 });
    return (await card.getAttribute("data-id")) ?? "";
  };
  const waitForDiff = async (text: string): Promise<void> => {
    await diffTabs().first().waitFor({ timeout: 15000 });
    await modified().locator(".view-line", { hasText: text }).first().waitFor({ timeout: 15000 });
  };
  const acceptInTitle = (): Promise<void> => page.locator('.editor-actions [aria-label*="Accept Proposed Edit"]').first().click({ timeout: 15000 });
  /** Types at the end of the proposal (a line of the person's own). */
  const typeIntoProposal = async (text: string): Promise<void> => {
    await modified().locator(".view-lines").click();
    await page.keyboard.press("Control+End");
    await page.keyboard.type(text);
  };
  /** The editor tabs by their labels (a dirty one ends in " ●"). */
  const tabs = async (): Promise<string[]> =>
    page.locator(".tabs-container .tab").evaluateAll((els) => els.map((el) => `${(el.querySelector(".monaco-icon-label-container") ?? el).textContent.trim()}${el.classList.contains("dirty") ? " ●" : ""}`));
  const failedSaves = (): Promise<string[]> => page.locator(".notifications-toasts .notification-toast", { hasText: /Failed to save|NoPermissions|Unable to write/ }).allInnerTexts();
  /** Opens a workspace file in an editor of its own (Quick Open). */
  const openFile = async (name: string): Promise<void> => {
    await page.keyboard.press("Control+P");
    await page.locator(".quick-input-widget input").fill(`${name}.py`);
    await page.locator(".quick-input-list .monaco-list-row", { hasText: `${name}.py` }).first().waitFor();
    await page.keyboard.press("Enter");
    await page.locator(".tabs-container .tab.active", { hasText: `${name}.py` }).waitFor();
  };
  /** The invariant after an accepted edit: the turn ended, the proposal's tabs are gone and nothing of it is left
   * unsaved or failed to save. `except`: tabs that may stay (the real file's own editor). */
  const settled = async (name: string, ended: number, except: string[] = []): Promise<void> => {
    await poll(`${name}: the turn to end`, async () => (await turnEnds()) === ended + 1, 30000);
    await poll(`${name}: the proposal's tabs to close`, async () => (await diffTabs().count()) === 0, 10000).catch(async (err: unknown) => {
      await shot(`${name}-not-closed`);
      throw err;
    });
    const left = (await tabs()).filter((t) => !except.includes(t));
    assert.deepEqual(left, [], `${name}: tabs left behind`);
    assert.deepEqual(await failedSaves(), [], `${name}: a failed save`);
  };
  /** Runs a command from the palette. F1 right after a click can open the palette and lose it at once (the focus
   * moving to the editor closes it: seen 1 run in 5 under load), so it is opened again until it stays. */
  const runCommand = async (title: string): Promise<void> => {
    const input = page.locator(".quick-input-widget input");
    await poll(`the command palette for ${title}`, async () => {
      if (!(await input.isVisible())) await page.keyboard.press("F1");
      return input.fill(`>${title}`, { timeout: 1000 }).then(
        () => true,
        () => false,
      );
    }, 15000);
    await page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first().click();
  };
  const closeAllEditors = async (): Promise<void> => {
    await page.keyboard.press("Control+K");
    await page.keyboard.press("Control+W");
    await poll("every editor to close", async () => (await tabs()).length === 0, 10000);
  };

  before(async () => {
    fs.mkdirSync(shots, { recursive: true });
    const files = { ...Object.fromEntries(variants.map((name, n) => [`${name}.py`, original(n)])), ".scenario/proposals.json": scenario("$WORKSPACE") };
    cs = await startCodeServer({ files, settings: { "agentBridge.offlineScenario": "$WORKSPACE/.scenario/proposals.json", "files.autoSave": "off" } });
    page = cs.page;
    panel = await openPanel(cs);
  });

  after(async () => {
    if ((page as Page | undefined) !== undefined) await shot("99-last").catch(() => undefined);
    if ((cs as CodeServer | undefined) !== undefined) fs.writeFileSync(path.join(shots, "logs.txt"), `${findLogs(path.join(cs.userData, "logs"))}\n==> code-server\n${cs.log()}`);
    await (cs as CodeServer | undefined)?.stop();
  });

  it("edited, then accepted at once in the diff's title: written as edited, nothing left", async () => {
    const n = variants.indexOf("quick");
    const ended = await turnEnds();
    await ask("quick");
    await waitForDiff(`return ${n} * 10`);
    await typeIntoProposal("# mine\n");
    await acceptInTitle();
    await settled("quick", ended);
    assert.equal(fs.readFileSync(file("quick"), "utf8"), `${proposed(n)}# mine\n`);
    await shot("01-quick");
  });

  it("accepted from the panel while the diff is still opening: no diff tab opens after the answer", async () => {
    const n = variants.indexOf("opening");
    const ended = await turnEnds();
    const id = await ask("opening");
    // The question has the keyboard: 1 allows it once, as soon as its answers take keys (a moment after it shows),
    // before the diff editor has had time to show.
    await panel.locator(`.item.permission.pending[data-id="${id}"] button[data-key="1"]:enabled`).waitFor({ timeout: 5000 });
    await page.keyboard.press("1");
    await settled("opening", ended);
    assert.equal(fs.readFileSync(file("opening"), "utf8"), proposed(n));
    await shot("02-opening");
  });

  it("the real file open in an editor: it shows the accepted text, not dirty", async () => {
    const n = variants.indexOf("open");
    await openFile("open");
    const ended = await turnEnds();
    await ask("open");
    await waitForDiff(`return ${n} * 10`);
    await typeIntoProposal("# mine\n");
    await acceptInTitle();
    await settled("open", ended, ["open.py"]);
    assert.equal(fs.readFileSync(file("open"), "utf8"), `${proposed(n)}# mine\n`);
    await page.locator(".tabs-container .tab", { hasText: "open.py" }).click();
    await page.locator(".editor-instance .view-line", { hasText: "# mine" }).first().waitFor({ timeout: 10000 });
    await shot("03-open");
    await closeAllEditors();
  });

  it("the real file open with unsaved edits of its own: they stay in its editor, saving it is VS Code's usual conflict, never NoPermissions", async () => {
    const n = variants.indexOf("dirty");
    await openFile("dirty");
    await page.locator(".editor-instance .view-lines").first().click();
    await page.keyboard.press("Control+Home");
    await page.keyboard.type("# my own unsaved line\n");
    await poll("the real file to be dirty", async () => (await tabs()).includes("dirty.py ●"));
    const ended = await turnEnds();
    await ask("dirty");
    await waitForDiff(`return ${n} * 10`);
    await typeIntoProposal("# mine\n");
    await acceptInTitle();
    await settled("dirty", ended, ["dirty.py ●"]);
    // What the bridge wrote is the accepted proposal (the bridge decides on which text it was made).
    assert.match(fs.readFileSync(file("dirty"), "utf8"), new RegExp(`def f${n}\\(\\):\\n    return ${n} \\* 10\\n# mine\\n$`));
    await shot("04-dirty");
    // The person's own edit is still in their editor (nothing discarded it); dropping it leaves no tab behind.
    await page.locator(".tabs-container .tab", { hasText: "dirty.py" }).click();
    await page.locator(".editor-instance .view-line", { hasText: "# my own unsaved line" }).first().waitFor({ timeout: 10000 });
    await runCommand("File: Revert File");
    await poll("the real file's editor to be clean", async () => (await tabs()).includes("dirty.py"));
    await closeAllEditors();
    assert.deepEqual(await failedSaves(), []);
  });

  it("the proposal's editor opened again after it closed (Reopen Closed Editor), changed and saved: no failed save", async () => {
    const n = variants.indexOf("reopen");
    const ended = await turnEnds();
    await ask("reopen");
    await waitForDiff(`return ${n} * 10`);
    await typeIntoProposal("# mine\n");
    await acceptInTitle();
    await settled("reopen", ended);
    assert.equal(fs.readFileSync(file("reopen"), "utf8"), `${proposed(n)}# mine\n`);
    await page.keyboard.press("Control+Shift+T");
    // Whatever comes back (the diff, or nothing), a change to it and a save must not fail or stay dirty.
    if (await diffTabs().count()) {
      await typeIntoProposal("# later\n");
      await page.keyboard.press("Control+S");
      await poll("the reopened proposal to be saved or closed", async () => !(await tabs()).some((t) => t.endsWith("●")), 10000);
    }
    assert.deepEqual(await failedSaves(), []);
    assert.equal(fs.readFileSync(file("reopen"), "utf8"), `${proposed(n)}# mine\n`, "a late change to an answered proposal never reaches the file");
    await shot("06-reopen");
    // The reopened proposal is the person's own tab now: closed here, so the next variant starts with none.
    await closeAllEditors();
    assert.deepEqual(await failedSaves(), []);
  });

  // Last: a failure leaves VS Code's save question up ("Do you want to save the changes you made to <file>?": a key
  // that landed between the extension's last save of the proposal and its close).
  it("keys typed into the proposal right after Accept: the accepted text is written, the tab closes without a prompt", async () => {
    const n = variants.indexOf("typedafter");
    const ended = await turnEnds();
    await ask("typedafter");
    await waitForDiff(`return ${n} * 10`);
    await typeIntoProposal("# mine\n");
    await acceptInTitle();
    // The focus is still in the proposal: the person types on while it closes.
    await page.keyboard.type(" and more", { delay: 15 });
    await settled("typedafter", ended);
    assert.match(fs.readFileSync(file("typedafter"), "utf8"), new RegExp(`^def f${n}\\(\\):\\n    return ${n} \\* 10\\n# mine`));
    assert.equal(await page.locator(".monaco-dialog-box").count(), 0, "no save prompt");
    await shot("05-typedafter");
  });
});

/** The extension's output channel and the extension host log, for the artifacts. */
function findLogs(dir: string): string {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const entry of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (/Agent Bridge|exthost\.log|renderer\.log/.test(entry.name)) out.push(`==> ${p}\n${fs.readFileSync(p, "utf8")}`);
    }
  };
  if (fs.existsSync(dir)) walk(dir);
  return out.join("\n");
}
