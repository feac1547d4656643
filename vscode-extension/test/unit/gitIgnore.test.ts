/** The personal settings file an "always" answer creates, in a real git repository (issue 24 item 12). */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, describe, it } from "node:test";
import { gitIgnoreCheck, ignoreInGit, offerToIgnore } from "../../src/gitIgnore";

const made: string[] = [];
after(() => made.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

function repo(): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "ab-ignore-"));
  made.push(root);
  execFileSync("git", ["init", "-q", root]);
  fs.mkdirSync(path.join(root, ".agent-bridge"));
  fs.writeFileSync(path.join(root, ".agent-bridge/settings.local.json"), "{}\n");
  return root;
}
const untracked = (root: string): string[] =>
  execFileSync("git", ["status", "--porcelain", "--untracked-files=all"], { cwd: root, encoding: "utf8" }).split("\n").filter(Boolean);

describe("keeping the personal settings file out of git", () => {
  it("an untracked personal file is found; after ‘Add to .gitignore’ git no longer shows it", async () => {
    const root = repo();
    const file = path.join(root, ".agent-bridge/settings.local.json");
    assert.deepEqual(untracked(root), ["?? .agent-bridge/settings.local.json"], "the control: git shows it");
    assert.deepEqual(await gitIgnoreCheck(file), { ignored: false, root: fs.realpathSync(root), relative: ".agent-bridge/settings.local.json" });
    await ignoreInGit(fs.realpathSync(root), ".agent-bridge/settings.local.json", "gitignore");
    assert.deepEqual(untracked(root), ["?? .gitignore"]);
    assert.deepEqual(await gitIgnoreCheck(file), { ignored: true });
    await ignoreInGit(fs.realpathSync(root), ".agent-bridge/settings.local.json", "gitignore");
    assert.equal(fs.readFileSync(path.join(root, ".gitignore"), "utf8"), "/.agent-bridge/settings.local.json\n", "added once");
  });

  it("‘Only for me’ writes .git/info/exclude and leaves the shared .gitignore alone", async () => {
    const root = repo();
    const checked = await gitIgnoreCheck(path.join(root, ".agent-bridge/settings.local.json"));
    assert.ok(checked && !checked.ignored);
    const hosted = { state: new Map<string, unknown>(), asked: [] as string[] };
    const host = {
      state: { get: (k: string) => hosted.state.get(k), update: (k: string, v: unknown) => Promise.resolve(void hosted.state.set(k, v)) },
      ask: (message: string) => (hosted.asked.push(message), Promise.resolve("Only for me")),
      log: { info: () => undefined, warn: () => undefined, error: () => undefined },
    };
    await offerToIgnore(path.join(root, ".agent-bridge/settings.local.json"), host);
    assert.equal(hosted.asked.length, 1);
    assert.deepEqual(untracked(root), []);
    assert.equal(fs.existsSync(path.join(root, ".gitignore")), false);
    assert.match(fs.readFileSync(path.join(root, ".git/info/exclude"), "utf8"), /^\/\.agent-bridge\/settings\.local\.json$/m);
    await offerToIgnore(path.join(root, ".agent-bridge/settings.local.json"), host);
    assert.equal(hosted.asked.length, 1, "asked once per file");
  });

  it("nothing is offered for a shared settings file, a tracked one, or outside git", async () => {
    const root = repo();
    assert.equal(await gitIgnoreCheck(path.join(root, ".agent-bridge/settings.json")), undefined);
    execFileSync("git", ["add", "-f", ".agent-bridge/settings.local.json"], { cwd: root });
    assert.equal(await gitIgnoreCheck(path.join(root, ".agent-bridge/settings.local.json")), undefined);
    const plain = fs.mkdtempSync(path.join(os.tmpdir(), "ab-nogit-"));
    made.push(plain);
    fs.mkdirSync(path.join(plain, ".claude"));
    assert.equal(await gitIgnoreCheck(path.join(plain, ".claude/settings.local.json")), undefined);
  });
});
