import * as path from "node:path";
import * as vscode from "vscode";
import type { Disposable } from "./events";
import type { ResourceContent } from "./protocol";

/**
 * The editor context a prompt can carry: the selection of the last active text editor, or its whole file,
 * and that file's diagnostics (the Problems of it). Focusing the panel clears `activeTextEditor`, so the
 * last one is remembered.
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
      vscode.languages.onDidChangeDiagnostics((e) => {
        const uri = this.editor()?.document.uri.toString();
        if (uri && e.uris.some((u) => u.toString() === uri)) this.changed.fire(this.label());
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

  /** How many diagnostics the context's file has (the panel's "Problems (n)"). */
  problemCount(): number {
    const editor = this.editor();
    return editor ? vscode.languages.getDiagnostics(editor.document.uri).length : 0;
  }

  /** The context file's diagnostics as an embedded text resource, for the prompt; none: undefined. */
  problems(): ResourceContent | undefined {
    const editor = this.editor();
    if (!editor) return undefined;
    const diagnostics = vscode.languages.getDiagnostics(editor.document.uri);
    if (!diagnostics.length) return undefined;
    const name = vscode.workspace.asRelativePath(editor.document.uri, false);
    return problemsResource(editor.document.uri.with({ fragment: "problems" }).toString(), name, diagnostics);
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

const severityNames = ["error", "warning", "info", "hint"];

/** `path:line:col severity: message [source code]`, one per line, errors first. */
export function problemsResource(uri: string, name: string, diagnostics: readonly vscode.Diagnostic[]): ResourceContent {
  const lines = [...diagnostics]
    .sort((a, b) => a.severity - b.severity || a.range.start.line - b.range.start.line)
    .map((d) => {
      const code = typeof d.code === "object" ? d.code.value : d.code;
      const source = [d.source, code].filter((x) => x !== undefined && x !== "").join(" ");
      const where = `${name}:${d.range.start.line + 1}:${d.range.start.character + 1}`;
      return `${where} ${severityNames[d.severity] ?? "problem"}: ${d.message.replace(/\s*\n\s*/g, " ")}${source ? ` [${source}]` : ""}`;
    });
  const text = `Problems in ${name} (VS Code diagnostics, ${diagnostics.length}):\n${lines.join("\n")}\n`;
  return { type: "resource", resource: { uri, text, mimeType: "text/plain" } };
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
