/**
 * The workspace's files as the panel needs them: a path from the model or a link resolved to a file (absolute,
 * `~/…`, relative to a workspace folder, or the one file whose path ends so), @-mention completion, and an
 * @-mentioned file as a prompt block. The file list is bounded, uses the usual excludes, and is listed again
 * after a file is created or deleted.
 */
import * as os from "node:os";
import * as path from "node:path";
import * as vscode from "vscode";
import type { Disposable } from "../events";
import type { ContentBlock } from "../protocol";
import { rankFiles } from "./fileSearch";
import type { FileChoice } from "./messages";

/** Mentioned files up to this size go in the prompt whole (an embedded resource); larger ones as a link. */
const embedLimit = 100_000;
const maxListedFiles = 20_000;
const maxChoices = 30;

export class WorkspaceFiles implements vscode.Disposable {
  private files: Promise<Map<string, vscode.Uri>> | undefined;
  private readonly subscriptions: Disposable[];

  constructor() {
    const watcher = vscode.workspace.createFileSystemWatcher("**/*", false, true, false);
    const forget = (): void => {
      this.files = undefined;
    };
    this.subscriptions = [watcher, watcher.onDidCreate(forget), watcher.onDidDelete(forget), vscode.workspace.onDidChangeWorkspaceFolders(forget)];
  }

  /** The workspace folders' paths (the panel shows paths under them relative). */
  folders(): string[] {
    return (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
  }

  /** Opens `file` at `line` (1-based); false when there is no such file. */
  async open(file: string, line: number | undefined): Promise<boolean> {
    const uri = await this.resolve(file);
    if (!uri) return false;
    const at = line && line > 0 ? new vscode.Position(line - 1, 0) : undefined;
    await vscode.window.showTextDocument(uri, { preview: true, ...(at ? { selection: new vscode.Range(at, at) } : {}) });
    return true;
  }

  /**
   * Which of `paths` (at most 200) name a file, told as soon as it is known: first every path a stat settles (at
   * once), then those only the workspace's file list can settle (a bare name found by its ending). Listing the
   * workspace starts VS Code's search service, which takes seconds on a busy machine: a path that is there must
   * not wait for the list a path that is not there needs (the panel's link test timed out so under load).
   */
  async check(paths: string[], tell: (status: Record<string, "exists" | "missing">) => void): Promise<void> {
    const asked = paths.slice(0, 200);
    const direct = await Promise.all(asked.map(async (p) => [p, await this.resolveDirect(p)] as const));
    const known: Record<string, "exists" | "missing"> = {};
    const listed: string[] = [];
    for (const [p, found] of direct) {
      if (found === "needs-list") listed.push(p);
      else known[p] = found ? "exists" : "missing";
    }
    if (Object.keys(known).length) tell(known);
    if (!listed.length) return;
    const later: Record<string, "exists" | "missing"> = {};
    for (const p of listed) later[p] = (await this.fromList(p)) ? "exists" : "missing";
    tell(later);
  }

  /** @-mention completion: the workspace files best matching `query`. */
  async find(query: string): Promise<FileChoice[]> {
    const map = await this.fileMap();
    return rankFiles([...map.keys()], query, maxChoices).map((p): FileChoice => ({ path: p }));
  }

  /** An @-mentioned file: its text embedded when it is small (unsaved changes included), else a link. */
  async mentionBlock(mention: string): Promise<ContentBlock | undefined> {
    const uri = (await this.fileMap()).get(mention) ?? (await this.resolve(mention));
    if (!uri) return undefined;
    const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
    if (open && open.getText().length <= embedLimit) {
      return { type: "resource", resource: { uri: uri.toString(), text: open.getText(), mimeType: mimeOf(open.languageId) } };
    }
    const stat = await vscode.workspace.fs.stat(uri);
    if (stat.size <= embedLimit) {
      const bytes = await vscode.workspace.fs.readFile(uri);
      if (!bytes.subarray(0, 8000).includes(0)) {
        return { type: "resource", resource: { uri: uri.toString(), text: new TextDecoder().decode(bytes), mimeType: "text/plain" } };
      }
    }
    return { type: "resource_link", uri: uri.toString(), name: mention };
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
  }

  /** A path from the model or a link: absolute, `~/…`, relative to a workspace folder, or the one file whose path ends so. */
  private async resolve(given: string): Promise<vscode.Uri | undefined> {
    const found = await this.resolveDirect(given);
    return found === "needs-list" ? this.fromList(given) : found;
  }

  /** What a stat settles: absolute, `~/…` or relative to a workspace folder; "needs-list" when only the file list can. */
  private async resolveDirect(given: string): Promise<vscode.Uri | undefined | "needs-list"> {
    let raw = given.replace(/^file:\/\//i, "");
    if (raw.startsWith("~/")) raw = path.join(os.homedir(), raw.slice(2));
    if (path.isAbsolute(raw)) return (await isFile(vscode.Uri.file(raw))) ? vscode.Uri.file(raw) : undefined;
    const rel = relative(raw);
    for (const folder of vscode.workspace.workspaceFolders ?? []) {
      const uri = vscode.Uri.joinPath(folder.uri, rel);
      if (await isFile(uri)) return uri;
    }
    return rel.startsWith("../") ? undefined : "needs-list";
  }

  /** A relative path in the workspace's file list: itself, or the one file whose path ends so. */
  private async fromList(given: string): Promise<vscode.Uri | undefined> {
    const rel = relative(given.replace(/^file:\/\//i, ""));
    const map = await this.fileMap();
    const exact = map.get(rel);
    if (exact) return exact;
    const matches = [...map.entries()].filter(([p]) => p.endsWith(`/${rel}`));
    return matches.length === 1 ? matches[0]?.[1] : undefined;
  }

  /** The workspace's files (bounded, the usual excludes), relative path → URI. */
  private fileMap(): Promise<Map<string, vscode.Uri>> {
    this.files ??= (async () => {
      const uris = await vscode.workspace.findFiles("**/*", excludeGlob(), maxListedFiles);
      const multi = (vscode.workspace.workspaceFolders?.length ?? 0) > 1;
      return new Map(uris.map((u) => [vscode.workspace.asRelativePath(u, multi), u] as const));
    })();
    return this.files;
  }
}

/** `files.exclude` and `search.exclude` (the globs set to true) and the usual build and dependency folders. */
function excludeGlob(): string {
  const globs = new Set(["**/node_modules/**", "**/.git/**", "**/.venv/**", "**/__pycache__/**"]);
  for (const section of ["files.exclude", "search.exclude"]) {
    const value = vscode.workspace.getConfiguration().get<Record<string, unknown>>(section) ?? {};
    for (const [glob, on] of Object.entries(value)) if (on === true) globs.add(glob);
  }
  return `{${[...globs].join(",")}}`;
}

function relative(raw: string): string {
  return raw.replace(/^\.\//, "");
}

async function isFile(uri: vscode.Uri): Promise<boolean> {
  try {
    return ((await vscode.workspace.fs.stat(uri)).type & vscode.FileType.File) !== 0;
  } catch {
    return false;
  }
}

function mimeOf(languageId: string): string {
  return languageId === "plaintext" ? "text/plain" : `text/x-${languageId}`;
}
