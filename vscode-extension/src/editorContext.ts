import * as path from "node:path";
import * as vscode from "vscode";
import type { Disposable } from "./events";
import type { ResourceContent } from "./protocol";

/**
 * The editor context a prompt can carry: the selection of the last active text editor, or its whole file.
 * Focusing the panel clears `activeTextEditor`, so the last one is remembered.
 */
export class EditorContext implements vscode.Disposable {
  private lastEditor: vscode.TextEditor | undefined = vscode.window.activeTextEditor;
  private readonly changed = new vscode.EventEmitter<string | undefined>();
  readonly onDidChange = this.changed.event;
  private readonly subscriptions: Disposable[];

  constructor() {
    this.subscriptions = [
      vscode.window.onDidChangeActiveTextEditor((e) => {
        if (e && isAttachable(e.document)) this.lastEditor = e;
        this.changed.fire(this.label());
      }),
      vscode.window.onDidChangeTextEditorSelection((e) => {
        if (isAttachable(e.textEditor.document)) this.lastEditor = e.textEditor;
        this.changed.fire(this.label());
      }),
      vscode.workspace.onDidCloseTextDocument((doc) => {
        if (this.lastEditor?.document === doc) this.lastEditor = undefined;
        this.changed.fire(this.label());
      }),
      this.changed,
    ];
  }

  /** e.g. "main.py:10-14" for a selection, "main.py" for the whole file. */
  label(): string | undefined {
    const editor = this.editor();
    if (!editor) return undefined;
    const name = path.basename(editor.document.uri.fsPath || editor.document.uri.path);
    const sel = editor.selection;
    if (sel.isEmpty) return name;
    return `${name}:${lineRange(sel)}`;
  }

  /** The selection (or whole file) as an embedded resource block, for the prompt. */
  resource(): ResourceContent | undefined {
    const editor = this.editor();
    return editor ? resourceOf(editor.document, editor.selection.isEmpty ? undefined : editor.selection) : undefined;
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
  }

  private editor(): vscode.TextEditor | undefined {
    const active = vscode.window.activeTextEditor;
    if (active && isAttachable(active.document)) return active;
    if (this.lastEditor && vscode.window.visibleTextEditors.includes(this.lastEditor)) return this.lastEditor;
    return undefined;
  }
}

export function resourceOf(doc: vscode.TextDocument, selection: vscode.Range | undefined): ResourceContent {
  let uri = doc.uri.toString();
  let text = doc.getText();
  if (selection) {
    text = doc.getText(selection);
    // The line range rides in the fragment, as editors do for links to a selection.
    uri = doc.uri.with({ fragment: `L${lineRange(selection)}` }).toString();
  }
  return { type: "resource", resource: { uri, text, mimeType: mimeOf(doc.languageId) } };
}

/** 1-based "first-last" lines; a selection ending at the start of a line does not include that line. */
function lineRange(range: vscode.Range): string {
  const last = range.end.character === 0 && range.end.line > range.start.line ? range.end.line : range.end.line + 1;
  return `${range.start.line + 1}-${last}`;
}

function mimeOf(languageId: string): string {
  return languageId === "plaintext" ? "text/plain" : `text/x-${languageId}`;
}

function isAttachable(doc: vscode.TextDocument): boolean {
  return doc.uri.scheme === "file" || doc.uri.scheme === "untitled";
}
