/**
 * Rewind and review in a real VS Code (issue 23): code-server + headless chromium, the packaged .vsix and the
 * bridge it installs for itself, the offline playground model running real commands in a real workspace.
 * A user message's Rewind shows its preview (the file it deletes, what no rewind undoes) and then takes the code
 * and the conversation back; a message's Changes keeps one hunk and undoes another, checked on disk; the file
 * opens in VS Code's own diff editor. Screenshots go to $E2E_ARTIFACTS/checkpoints.
 * Needs E2E_NODE_BIN, E2E_CODE_SERVER, E2E_CHROMIUM (printed by scripts/setup-vscode-e2e).
 */
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import type { FrameLocator } from "playwright-core";
import { poll } from "../poll";
import { type CodeServer, openPanel, sendPrompt, startCodeServer } from "./codeServer";

const repo = path.resolve(__dirname, "../../..");
const shots = path.join(process.env.E2E_ARTIFACTS ?? path.join(repo, ".artifacts/vscode-e2e"), "checkpoints");
const notes = "alpha\nbeta\ngamma\ndelta\nepsilon\n";

describe("rewind to a message and review per hunk in a real VS Code", () => {
  let cs: CodeServer;
  let panel: FrameLocator;
  const file = (name: string): string => path.join(cs.workspace, name);
  const shot = async (name: string): Promise<void> => {
    await cs.page.screenshot({ path: path.join(shots, `${name}.png`) });
  };
  const send = (text: string): Promise<void> => sendPrompt(cs, panel, text, { shots, timeoutMs: 60000 });
  const userMessage = (n: number) => panel.locator(".item.user").nth(n);

  before(async () => {
    fs.mkdirSync(shots, { recursive: true });
    for (const f of fs.readdirSync(shots)) if (f.endsWith(".png")) fs.rmSync(path.join(shots, f));
    cs = await startCodeServer({
      files: { "notes.txt": notes },
      // Commands run without a question (the review is after the fact: nothing waits on it).
      settings: { "agentBridge.offlineScenario": "playground", "agentBridge.permissionMode": "bypassPermissions" },
    });
    panel = await openPanel(cs);
  });

  after(async () => {
    if (cs as CodeServer | undefined) {
      await shot("99-last").catch(() => undefined);
      await cs.stop();
    }
  });

  it("rewinds code and conversation to before a message, after a preview", async () => {
    await send("run: sed -i 's/beta/BETA/; s/delta/DELTA/' notes.txt");
    await send("run: echo extra > extra.txt");
    assert.equal(fs.readFileSync(file("notes.txt"), "utf8"), "alpha\nBETA\ngamma\nDELTA\nepsilon\n");
    assert.ok(fs.existsSync(file("extra.txt")));
    // Each message learns its turn from the bridge's answer, and then offers Rewind.
    await userMessage(1).locator("button[data-user='rewind']").waitFor({ timeout: 10000 });
    await shot("01-two-prompts");

    await userMessage(1).hover();
    await userMessage(1).locator("button[data-user='rewind']").click();
    const dialog = panel.locator("#overlay.rewind");
    await dialog.locator(".rewind-file[data-path='extra.txt']").waitFor({ timeout: 20000 });
    assert.match(await dialog.locator(".rewind-file[data-path='extra.txt']").innerText(), /delete\s+extra\.txt\s+by .*echo extra/);
    assert.match(await dialog.locator(".rewind-irreversible").innerText(), /No rewind undoes:[\s\S]*echo extra > extra\.txt/);
    assert.ok(fs.existsSync(file("extra.txt")), "a preview changes nothing");
    await shot("02-rewind-preview");

    await dialog.locator("button[data-dialog='rewind-confirm']").click();
    await poll("extra.txt to be gone", () => !fs.existsSync(file("extra.txt")), 20000, 100);
    assert.equal(fs.readFileSync(file("notes.txt"), "utf8"), "alpha\nBETA\ngamma\nDELTA\nepsilon\n", "the first message's change stays");
    // The conversation as the bridge now holds it: the first message alone, the second back in the input.
    await poll("the conversation to be rewound", async () => (await panel.locator(".item.user").count()) === 1, 30000, 100);
    assert.equal(await panel.locator("#input").inputValue(), "run: echo extra > extra.txt");
    await panel.locator(".item.notice", { hasText: "Deleted 1 file the agent had made: extra.txt" }).waitFor({ timeout: 10000 });
    await shot("03-rewound");
  });

  it("keeps one hunk and undoes another of a message's changes, and opens the file in the diff editor", async () => {
    await panel.locator("#input").fill("");
    await userMessage(0).locator("button[data-user='changes']").waitFor({ timeout: 20000 });
    await userMessage(0).hover();
    await userMessage(0).locator("button[data-user='changes']").click();
    const view = panel.locator("#overlay.changes");
    const hunks = view.locator(".change-file[data-path='notes.txt'] .change-hunk");
    await poll("the two hunks of notes.txt", async () => (await hunks.count()) === 2, 20000, 100);
    assert.match(await hunks.nth(0).innerText(), /-beta\s*\+BETA/);
    assert.match(await hunks.nth(1).innerText(), /-delta\s*\+DELTA/);
    await shot("04-changes");

    await hunks.nth(0).locator("button[data-review='keep']").click();
    await panel.locator("#toast", { hasText: "Kept 1 change" }).waitFor({ timeout: 20000 });
    // The kept hunk leaves the session's review; the other is still there to undo.
    const undo = view.locator(".change-hunk", { hasText: "DELTA" }).locator("button[data-review='undo']");
    await undo.waitFor({ timeout: 20000 });
    await poll("the buttons to be ready again", async () => !(await undo.isDisabled()), 20000, 100);
    await undo.click();
    await poll("the undone hunk on disk", () => fs.readFileSync(file("notes.txt"), "utf8") === "alpha\nBETA\ngamma\ndelta\nepsilon\n", 20000, 100);
    await panel.locator("#toast", { hasText: "Undid 1 change" }).waitFor({ timeout: 20000 });
    await shot("05-kept-and-undone");

    // The session's view: the kept hunk is the baseline now, the undone one is gone: nothing left to review.
    await view.locator("button[data-dialog='close']").click();
    await panel.locator("#changes").click();
    await panel.locator("#overlay.changes", { hasText: "every change is kept" }).waitFor({ timeout: 20000 });

    // A message's change in VS Code's own diff editor (the turn's before ↔ the file now).
    await view.locator("button[data-dialog='close']").click();
    await userMessage(0).hover();
    await userMessage(0).locator("button[data-user='changes']").click();
    const open = panel.locator("#overlay.changes .change-file[data-path='notes.txt'] button[data-open='notes.txt']").first();
    await open.waitFor({ timeout: 20000 });
    await open.click();
    await cs.page.locator(".monaco-diff-editor").first().waitFor({ timeout: 20000 });
    await cs.page.locator(".tab", { hasText: "notes.txt (agent's changes: this prompt)" }).waitFor({ timeout: 20000 });
    // Before the prompt on the left (the baseline the bridge keeps), the file as it is now on the right.
    const diff = cs.page.locator(".monaco-diff-editor").first();
    await diff.locator(".editor.original .view-lines", { hasText: "delta" }).waitFor({ timeout: 20000 });
    await diff.locator(".editor.modified .view-lines", { hasText: "BETA" }).waitFor({ timeout: 20000 });
    await shot("06-diff-editor");
  });

  it("undoes the hunk at the cursor from the diff editor's title bar", async () => {
    await panel.locator("#overlay.changes button[data-dialog='close']").click();
    await send("run: sed -i 's/gamma/GAMMA/; s/epsilon/EPSILON/' notes.txt");
    await panel.locator("#changes").click();
    const open = panel.locator("#overlay.changes .change-file[data-path='notes.txt'] button[data-open='notes.txt']").first();
    await open.waitFor({ timeout: 20000 });
    await open.click();
    const diff = cs.page.locator(".monaco-diff-editor").first();
    await cs.page.locator(".tab", { hasText: "notes.txt (agent's changes: the session)" }).waitFor({ timeout: 20000 });
    const gamma = diff.locator(".editor.modified .view-line", { hasText: "GAMMA" });
    await gamma.waitFor({ timeout: 20000 });
    await gamma.click();
    const undoHunk = cs.page.locator('.editor-actions a.action-label[aria-label^="Undo This Change"]');
    await undoHunk.waitFor({ timeout: 20000 });
    await shot("07-diff-editor-hunk-actions");
    await undoHunk.click();
    await poll("the hunk at the cursor undone on disk", () => fs.readFileSync(file("notes.txt"), "utf8") === "alpha\nBETA\ngamma\ndelta\nEPSILON\n", 20000, 100);
    // The other hunk is still there to review, in the panel too, and only it: the panel's list is refreshed after
    // the file changed on disk, so it is waited for (the EPSILON hunk was listed before the undo too).
    await poll("the panel's Changes to list the other hunk alone", async () => (await panel.locator("#overlay.changes .change-hunk").count()) === 1, 20000, 100);
    await panel.locator("#overlay.changes .change-hunk", { hasText: "EPSILON" }).waitFor({ timeout: 20000 });
    // The diff editor shows the file as it is now.
    await diff.locator(".editor.modified .view-line", { hasText: /^gamma$/ }).waitFor({ timeout: 20000 });
    await shot("08-diff-editor-hunk-undone");
  });
});
