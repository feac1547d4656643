/**
 * The HTML of the rewind dialog and the Changes view (issue 23): pure string functions of what the host sent, so
 * the unit tests can read them. Every button says what it acts on in `data-*` attributes; main.ts posts them.
 */
import type { ChangesView, RewindDialog } from "../src/panel/messages";
import type { ChangedFile, ReviewHunk, RewindFile, RewindMode } from "../src/protocol";
import { escapeHtml } from "./markdown";

const modes: { mode: RewindMode; label: string; title: string }[] = [
  { mode: "both", label: "Code and conversation", title: "The files and the conversation go back to before this message" },
  { mode: "code", label: "Code only", title: "The files go back; the conversation stays" },
  { mode: "conversation", label: "Conversation only", title: "The conversation goes back; the files stay as they are" },
];

const actionWords: Record<RewindFile["action"], string> = { restore: "restore", recreate: "recreate", delete: "delete", mode: "restore the mode of" };

/** The rewind dialog: what goes back, each file with its action and the steps that changed it, each conflict with
 * its decision (keep mine by default), what no rewind undoes, then Rewind / Cancel. */
export function rewindHtml(d: RewindDialog): string {
  const head = `<div class="dialog-head"><strong>Rewind to before</strong> “${escapeHtml(d.text)}”</div>`;
  const tabs = `<div class="rewind-modes" role="radiogroup">${modes
    .map((m) => `<label title="${escapeHtml(m.title)}"><input type="radio" name="rewind-mode" value="${m.mode}"${m.mode === d.mode ? " checked" : ""}> ${escapeHtml(m.label)}</label>`)
    .join("")}</div>`;
  if (d.error) return `${head}${tabs}<div class="dialog-error">${escapeHtml(d.error)}</div>${buttons(false)}`;
  const p = d.preview;
  if (!p) return `${head}${tabs}<div class="dialog-wait">Working out what a rewind does…</div>${buttons(false)}`;
  const conversation = d.mode !== "code" ? `<p class="rewind-line">${escapeHtml(p.text.split("\n")[1] ?? "")}</p>` : "";
  const problem = p.codeProblem ? `<p class="dialog-error">${escapeHtml(p.codeProblem)}</p>` : "";
  const files = p.files.length
    ? `<ul class="rewind-files">${p.files
        .map(
          (f) =>
            `<li class="rewind-file${f.conflict ? " conflict" : ""}" data-path="${escapeHtml(f.path)}"><span class="rewind-action">${escapeHtml(actionWords[f.action])}</span> <code>${escapeHtml(f.path)}</code>` +
            (f.steps.length ? ` <span class="rewind-steps">by ${f.steps.map((s) => escapeHtml(s)).join(", ")}</span>` : "") +
            (f.conflict
              ? `<div class="rewind-conflict">⚠ ${escapeHtml(f.conflict)} <select class="resolution" data-path="${escapeHtml(f.path)}" title="What to do with this file"><option value="keep" selected>Keep it as it is now</option><option value="merge">Take the agent's changes out, keep the rest</option><option value="overwrite">Overwrite it</option></select></div>`
              : "") +
            `</li>`,
        )
        .join("")}</ul>`
    : d.mode !== "conversation" && !p.codeProblem
      ? `<p class="rewind-line">No file changed since: the code stays as it is.</p>`
      : "";
  const irreversible = p.irreversible.length
    ? `<div class="rewind-irreversible"><strong>No rewind undoes:</strong><ul>${p.irreversible.map((i) => `<li>${escapeHtml(i)}</li>`).join("")}</ul></div>`
    : "";
  return `${head}${tabs}${conversation}${problem}${files}${irreversible}${buttons(true)}`;
}

function buttons(canConfirm: boolean): string {
  return `<div class="dialog-buttons"><button type="button" data-dialog="rewind-confirm"${canConfirm ? "" : " disabled"}>Rewind</button><button type="button" class="secondary" data-dialog="close">Cancel</button></div>`;
}

/** The Changes view: Keep all / Undo all, then each file (its status, who changed it, Open diff / Keep / Undo),
 * then each hunk with its lines and Keep / Undo. */
export function changesHtml(v: ChangesView, folders: string[] = []): string {
  const head = `<div class="dialog-head"><strong>Changes</strong> — ${escapeHtml(v.title)}</div>`;
  const close = `<button type="button" class="secondary" data-dialog="close">Close</button>`;
  if (v.error) return `${head}<div class="dialog-error">${escapeHtml(v.error)}</div><div class="dialog-buttons">${close}</div>`;
  if (!v.loaded) return `${head}<div class="dialog-wait">Reading the checkpoints…</div><div class="dialog-buttons">${close}</div>`;
  if (!v.files.length) return `${head}<p class="rewind-line">Nothing ${v.turnId ? "this prompt changed is left to review" : "to review: every change is kept"}.</p><div class="dialog-buttons">${close}</div>`;
  const all = `<div class="dialog-buttons"><button type="button" data-review="keep" title="Keep every change shown">Keep all</button><button type="button" class="secondary" data-review="undo" title="Undo every change shown (a file you edited since keeps your edit)">Undo all</button>${close}</div>`;
  return `${head}${all}<div class="change-files">${v.files.map((f) => fileHtml(f, folders)).join("")}</div>`;
}

function fileHtml(f: ChangedFile, folders: string[]): string {
  const shown = relative(f.path, folders);
  const by = [...new Set(f.steps.map((s) => s.title))];
  const path = escapeHtml(f.path);
  const head =
    `<div class="change-head"><button type="button" class="link" data-open="${path}" title="Open in the diff editor">${escapeHtml(shown)}</button> <span class="change-status ${f.status}">${f.status}</span>` +
    (f.editedSince ? ` <span class="change-edited" title="Changed since by someone other than the agent">edited since</span>` : "") +
    `<span class="change-actions"><button type="button" class="secondary" data-open="${path}">Diff</button><button type="button" class="secondary" data-review="keep" data-path="${path}">Keep</button><button type="button" class="secondary" data-review="undo" data-path="${path}">Undo</button></span></div>`;
  const steps = by.length ? `<div class="change-steps">by ${by.map((t) => escapeHtml(t)).join(", ")}</div>` : "";
  if (f.binary || f.tooBig || f.oldText === null || f.newText === null) {
    const why = f.binary ? "a binary file" : f.tooBig ? "too big to show" : f.status === "mode" ? `mode ${f.oldMode ?? "?"} → ${f.newMode ?? "?"}` : "";
    return `<div class="change-file" data-path="${path}">${head}${steps}${why ? `<div class="change-note">${escapeHtml(why)}</div>` : ""}</div>`;
  }
  const oldLines = splitLines(f.oldText);
  const newLines = splitLines(f.newText);
  const hunks = f.hunks.map((h) => hunkHtml(f, h, oldLines, newLines)).join("");
  return `<div class="change-file" data-path="${path}">${head}${steps}${hunks}</div>`;
}

function hunkHtml(f: ChangedFile, h: ReviewHunk, oldLines: string[], newLines: string[]): string {
  const removed = oldLines.slice(h.oldStart, h.oldStart + h.oldLines).map((l) => `<div class="del">-${escapeHtml(l)}</div>`);
  const added = newLines.slice(h.newStart, h.newStart + h.newLines).map((l) => `<div class="add">+${escapeHtml(l)}</div>`);
  const where = `line ${h.newStart + 1}${h.newLines > 1 ? `–${h.newStart + h.newLines}` : ""}`;
  const data = `data-path="${escapeHtml(f.path)}" data-hunk="${h.index}" data-hunk-id="${escapeHtml(h.id)}"`;
  return (
    `<div class="change-hunk" data-hunk="${h.index}"><div class="hunk-head"><span>${where}</span><span class="change-actions">` +
    `<button type="button" class="secondary" data-review="keep" ${data} title="Keep this change">Keep</button>` +
    `<button type="button" class="secondary" data-review="undo" ${data} title="Undo this change">Undo</button></span></div>` +
    `<pre class="hunk-lines">${[...removed, ...added].join("")}</pre></div>`
  );
}

function splitLines(text: string): string[] {
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}

function relative(file: string, folders: string[]): string {
  for (const folder of folders) {
    const root = folder.endsWith("/") ? folder : `${folder}/`;
    if (file.startsWith(root)) return file.slice(root.length);
  }
  return file;
}
