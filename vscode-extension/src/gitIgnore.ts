/**
 * A personal settings file (`.agent-bridge/settings.local.json`, `.claude/settings.local.json`) that an
 * "always" answer created in a git repository shows up as untracked, ready to be committed by mistake. The
 * first time, offer to keep it out of git: for everyone (`.gitignore`) or only here (`.git/info/exclude`).
 * No `vscode` (the editor is behind `IgnoreOfferHost`): the unit tests run it on a real repository.
 */
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import type { Logger } from "./conversation";

/** What the offer needs of the editor: a memory (asked once per file) and a way to ask. */
export interface IgnoreOfferHost {
  state: { get: (key: string) => unknown; update: (key: string, value: unknown) => Thenable<void> | Promise<void> };
  ask: (message: string, ...choices: string[]) => Thenable<string | undefined> | Promise<string | undefined>;
  log: Logger;
}

/** The personal files: what an "always" answer writes in a project. */
const personal = /[/\\](\.agent-bridge|\.claude)[/\\]settings\.local\.json$/;

export type IgnoreCheck = { ignored: true } | { ignored: false; root: string; relative: string } | undefined;

/** Whether git would show `file` as untracked: undefined when it is not a personal file in a git work tree. */
export async function gitIgnoreCheck(file: string): Promise<IgnoreCheck> {
  if (!personal.test(file)) return undefined;
  const dir = path.dirname(file);
  const root = await git(dir, ["rev-parse", "--show-toplevel"]).catch(() => undefined);
  if (root === undefined) return undefined;
  const top = root.trim();
  const relative = path.relative(top, file).split(path.sep).join("/");
  if (relative.startsWith("..")) return undefined;
  const ignored = await git(top, ["check-ignore", "-q", "--", relative]).then(
    () => true,
    () => false,
  );
  if (ignored) return { ignored: true };
  const tracked = await git(top, ["ls-files", "--error-unmatch", "--", relative]).then(
    () => true,
    () => false,
  );
  return tracked ? undefined : { ignored: false, root: top, relative };
}

/** Appends `/relative` to `.gitignore` (shared) or `.git/info/exclude` (this clone only). */
export async function ignoreInGit(root: string, relative: string, where: "gitignore" | "exclude"): Promise<string> {
  const file = where === "gitignore" ? path.join(root, ".gitignore") : path.join((await git(root, ["rev-parse", "--absolute-git-dir"])).trim(), "info", "exclude");
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const before = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : "";
  const line = `/${relative}`;
  if (!before.split(/\r?\n/).includes(line)) fs.appendFileSync(file, `${before && !before.endsWith("\n") ? "\n" : ""}${line}\n`);
  return file;
}

export async function offerToIgnore(file: string, { state, ask, log }: IgnoreOfferHost): Promise<void> {
  const check = await gitIgnoreCheck(file).catch(() => undefined);
  if (!check || check.ignored) return;
  const asked = `agentBridge.ignoreOffered:${check.root}/${check.relative}`;
  if (state.get(asked) === true) return;
  await state.update(asked, true);
  const everyone = "Add to .gitignore";
  const me = "Only for me";
  const choice = await ask(
    `Agent Bridge saved your rule in ${check.relative}, which is personal and not ignored by git. Keep it out of git?`,
    everyone,
    me,
    "Not now",
  );
  if (choice !== everyone && choice !== me) return;
  try {
    const written = await ignoreInGit(check.root, check.relative, choice === everyone ? "gitignore" : "exclude");
    log.info(`Ignored ${check.relative} in ${written}`);
  } catch (err) {
    log.error(`Could not update git's ignore list: ${err instanceof Error ? err.message : String(err)}`);
  }
}

function git(cwd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile("git", args, { cwd, timeout: 5000 }, (err, stdout) => (err ? reject(new Error(err.message)) : resolve(stdout)));
  });
}
