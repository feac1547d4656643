import * as path from "node:path";
import * as vscode from "vscode";
import type { DiffContent } from "./protocol";

export const proposedScheme = "agent-bridge-proposed";

/**
 * Shows a proposed edit in VS Code's diff editor: both sides are virtual documents served from memory
 * (`agent-bridge-proposed:` URIs), so nothing touches the file until the bridge applies an accepted edit.
 */
export class ProposedEdits implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private readonly registration = vscode.workspace.registerTextDocumentContentProvider(proposedScheme, this);

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? "";
  }

  /** Opens the diff for a permission request; the request id rides in the URI query. */
  async open(permissionId: string, diff: DiffContent): Promise<void> {
    const base = path.basename(diff.path);
    const left = this.uriFor(permissionId, diff.path, "current");
    const right = this.uriFor(permissionId, diff.path, "proposed");
    this.texts.set(left.toString(), diff.oldText ?? "");
    this.texts.set(right.toString(), diff.newText);
    await vscode.commands.executeCommand("vscode.diff", left, right, `${base} ↔ proposed edit`, { preview: false });
  }

  /** The permission request a diff editor's document belongs to, if any. */
  permissionIdOf(uri: vscode.Uri | undefined): string | undefined {
    if (uri?.scheme !== proposedScheme) return undefined;
    return new URLSearchParams(uri.query).get("permission") ?? undefined;
  }

  /** Closes the diff tabs of a settled request and forgets their text. */
  async close(permissionId: string): Promise<void> {
    const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((tab) => {
      const input = tab.input;
      return input instanceof vscode.TabInputTextDiff && this.permissionIdOf(input.modified) === permissionId;
    });
    for (const key of [...this.texts.keys()]) {
      if (this.permissionIdOf(vscode.Uri.parse(key)) === permissionId) this.texts.delete(key);
    }
    if (tabs.length) await vscode.window.tabGroups.close(tabs);
  }

  dispose(): void {
    this.registration.dispose();
    this.texts.clear();
  }

  private uriFor(permissionId: string, filePath: string, side: string): vscode.Uri {
    return vscode.Uri.from({ scheme: proposedScheme, path: filePath, query: `permission=${permissionId}&side=${side}` });
  }
}
