/**
 * The panel's host side in a real VS Code (code-server + headless chromium; the packaged .vsix and the bridge
 * it installs for itself, nothing else; the offline playground model): file links open the file at the line, a
 * code block's Copy reaches the clipboard, @-mention completion lists the workspace's files, the active file's
 * problems go with a prompt.
 * Needs E2E_NODE_BIN, E2E_CODE_SERVER, E2E_CHROMIUM (printed by scripts/setup-vscode-e2e).
 */
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import type { FrameLocator, Locator, Page } from "playwright-core";
import { poll } from "../poll";
import { type CodeServer, openPanel, sendPrompt, startCodeServer } from "./codeServer";

const repo = path.resolve(__dirname, "../../..");
// A folder of its own: vscode.test.ts clears the PNGs of the main one when it starts.
const shots = path.join(process.env.E2E_ARTIFACTS ?? path.join(repo, ".artifacts/vscode-e2e"), "panel");

describe("the panel's file links, copy, mentions and problems in a real VS Code", () => {
  let cs: CodeServer;
  let workspace: string;
  let page: Page;
  let panel: FrameLocator;

  const shot = async (name: string): Promise<void> => {
    await page.screenshot({ path: path.join(shots, `panel-${name}.png`) });
  };
  const turns = async (): Promise<number> => panel.locator(".item.turnEnd").count();
  const send = (text: string): Promise<void> => sendPrompt(cs, panel, text, { shots });

  before(async () => {
    fs.mkdirSync(shots, { recursive: true });
    cs = await startCodeServer({
      settings: { "agentBridge.offlineScenario": "playground" },
      files: {
        "hello.py": 'def greet(name):\n    return f"hello {name}"\n\n\nprint(greet("x"))\n',
        "src/helpers.py": "X = 1\n",
        "broken.json": '{ "a": 1,, }\n',
      },
      clipboard: true,
    });
    ({ workspace, page } = cs);
    // The first start sets up the bundled bridge in the extension's storage (a private venv) before Send is ready.
    panel = await openPanel(cs);
  });

  after(async () => {
    if ((page as Page | undefined) !== undefined) await shot("99-last").catch(() => undefined);
    await cs.stop();
  });

  it("a path in an answer becomes a link once the host found the file; clicking opens it at the line", async () => {
    await send("please look at hello.py:5 and src/nothere.py:1");
    const link = panel.locator('.item.agent a.file-link[data-path="hello.py"][data-line="5"]').first();
    await link.waitFor({ timeout: 15000 });
    assert.equal(await panel.locator('.item.agent a.file-link[data-path="src/nothere.py"]').count(), 0, "a path that is not there stays text");
    await link.click();
    await page.locator(".tabs-container .tab", { hasText: "hello.py" }).waitFor({ timeout: 15000 });
    // The cursor is on line 5 (the status bar says so).
    await page.locator(".statusbar", { hasText: /Ln 5, Col 1/ }).waitFor({ timeout: 10000 });
    await shot("01-file-link-opened");
  });

  it("a tool card's location opens the file it read", async () => {
    await send(`read: ${path.join(workspace, "src/helpers.py")}`);
    const location = panel.locator(".item.tool a.file-link.location", { hasText: "src/helpers.py" }).first();
    await location.click();
    await page.locator(".tabs-container .tab", { hasText: "helpers.py" }).waitFor({ timeout: 15000 });
  });

  it("a code block's Copy puts its text on the clipboard", async () => {
    await send("copy me please");
    const block = panel.locator(".item.agent").last().locator(".code-block").last();
    await block.locator("button.copy-code").click();
    await block.locator("button.copy-code", { hasText: "Copied" }).waitFor();
    await poll("the clipboard to hold the code", async () => (await page.evaluate(() => navigator.clipboard.readText()).catch(() => "")) === "copy me please\n", 10000, 100);
    await shot("02-copied");
  });

  it("@ lists the workspace's files; the chosen one goes with the prompt as a chip that opens it", async () => {
    await panel.locator("#input").click();
    await panel.locator("#input").pressSequentially("what is in @help");
    await panel.locator("#mentions li", { hasText: "helpers.py" }).waitFor({ timeout: 15000 });
    await shot("03-mention-list");
    await panel.locator("#input").press("Enter");
    assert.equal(await panel.locator("#input").inputValue(), "what is in @src/helpers.py ");
    const before = await turns();
    await panel.locator("#input").press("Enter");
    await poll("the mention turn to end", async () => (await turns()) > before, 30000, 100);
    const chip = panel.locator(".item.user").last().locator("a.file-link.chip", { hasText: "helpers.py" });
    await chip.waitFor();
    assert.match((await chip.getAttribute("data-path")) ?? "", /src\/helpers\.py$/);
  });

  it("the active file's problems can go with a prompt", async () => {
    await page.keyboard.press("Control+P");
    await page.locator(".quick-input-widget input").fill("broken.json");
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "broken.json" }).first().waitFor();
    await page.keyboard.press("Enter");
    await panel.locator("#problems-label:not([hidden])").waitFor({ timeout: 30000 });
    await panel.locator("#problems").check();
    await send("fix the problems");
    await panel.locator(".item.user").last().locator(".chip", { hasText: "broken.json problems" }).waitFor();
    await shot("04-problems-attached");
  });

  it("“Try it offline” runs the demo model by name and at no cost, and `tour` shows a whole task; each question takes the keyboard (issue 24 items 6, 9)", async () => {
    assert.equal(await panel.locator("#model").innerText(), "Offline demo model");
    const before = await turns();
    await panel.locator("#input").fill("tour");
    await panel.locator("#input").press("Enter");
    const steps = [
      { what: "tour_demo.py", diff: true, shot: "05a-tour-new-file-review" },
      { what: "tour_demo.py", diff: true, shot: "05b-tour-edit-review" },
      { what: "python3 tour_demo.py", diff: false, shot: "05c-tour-asks-to-run" },
    ];
    for (const step of steps) {
      const card = panel.locator(".item.permission.pending", { hasText: step.what });
      await card.waitFor({ timeout: 30000 });
      // The question has the keyboard (the diff opens beside it without taking the focus): 1 allows it once.
      await panel.locator(".item.permission.pending:focus").waitFor({ timeout: 5000 });
      if (step.diff) await page.locator(".tabs-container .tab", { hasText: "proposed edit" }).first().waitFor({ timeout: 15000 });
      if (!step.diff) await underscoreShows(page, card.first().locator("pre.perm-command"));
      await shot(step.shot);
      const id = (await card.first().getAttribute("data-id")) ?? "";
      await card.first().locator('button[data-key="1"]:enabled').waitFor({ timeout: 5000 }); // (a moment after it shows)
      await page.keyboard.press("1");
      await panel.locator(`.item.permission.pending[data-id="${id}"]`).waitFor({ state: "detached", timeout: 10000 });
    }
    await poll("the tour to end", async () => (await turns()) > before, 60000, 100);
    assert.match(fs.readFileSync(path.join(workspace, "tour_demo.py"), "utf8"), /return f"Hello, \{name\}!"/);
    assert.match(await panel.locator(".item.agent").last().innerText(), /That was the tour/);
    assert.match(await panel.locator("#plan").innerText(), /5\/5/);
    assert.doesNotMatch(await panel.locator(".item.turnEnd").last().innerText(), /\$/, "no price for the demo model");
    assert.match(await panel.locator(".item.agent").first().innerText(), /./);
    await shot("05-tour-done");
  });

});

/**
 * Every character of the asked command shows in the editor's own font: the card drawn as it is and drawn again
 * with its `_` written as spaces (in place, then put back) must differ in some pixels. In code-server's Droid
 * Sans Mono the mark's outline covered the underscore: 0 pixels differed, the card read "python3 tour demo.py".
 */
async function underscoreShows(page: Page, pre: Locator): Promise<void> {
  assert.match(await pre.innerText(), /_/, "the command has an underscore to see");
  const drawn = await pre.screenshot();
  const text = await pre.locator("mark").first().evaluate((m) => {
    const was = m.textContent;
    m.textContent = was.replaceAll("_", " ");
    return was;
  });
  const spaced = await pre.screenshot();
  await pre.locator("mark").first().evaluate((m, was) => (m.textContent = was), text);
  const inked = await page.evaluate(
    async ({ a, b }) => {
      // (no named functions in here: the test runner's transform would wrap them in a helper the page lacks)
      const images: ImageData[] = [];
      for (const png of [a, b]) {
        const bitmap = await createImageBitmap(new Blob([Uint8Array.from(atob(png), (c) => c.charCodeAt(0))], { type: "image/png" }));
        const ctx = new OffscreenCanvas(bitmap.width, bitmap.height).getContext("2d") as OffscreenCanvasRenderingContext2D;
        ctx.drawImage(bitmap, 0, 0);
        images.push(ctx.getImageData(0, 0, bitmap.width, bitmap.height));
      }
      const [x, y] = images as [ImageData, ImageData];
      if (x.width !== y.width || x.height !== y.height) return -1;
      let differ = 0;
      for (let i = 0; i < x.data.length; i += 4) if (Math.max(...[0, 1, 2].map((k) => Math.abs((x.data[i + k] ?? 0) - (y.data[i + k] ?? 0)))) > 96) differ++;
      return differ;
    },
    { a: drawn.toString("base64"), b: spaced.toString("base64") },
  );
  assert.ok(inked > 0, `the underscore draws nothing (${inked} pixels differ): the command reads as if it had a space`);
}
