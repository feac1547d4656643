/**
 * The quick picks and confirmations a conversation asks through: the permission mode (Bypass permissions asks
 * first, in a modal), the model, and a stored session to resume. The conversation decides what to do with the
 * answer; this module only asks (so conversation.ts needs no `vscode` and is unit-tested without it).
 */
import * as vscode from "vscode";
import type { SessionInfo, SessionModels, SessionModes } from "./protocol";

export interface Pickers {
  /** One of the session's modes, or undefined when dismissed. */
  pickMode(modes: SessionModes | undefined): Promise<string | undefined>;
  /** Whether the user really wants every tool call to run without asking. */
  confirmBypass(): Promise<boolean>;
  /** A model id from the session's list, or one typed in; undefined when dismissed. */
  pickModel(models: SessionModels | undefined): Promise<string | undefined>;
  /** A stored session of `cwd` to resume (the shown one is not offered; `open` ones say so); undefined when dismissed or none. */
  pickStoredSession(stored: SessionInfo[], cwd: string, current: string | undefined, open?: ReadonlySet<string>): Promise<string | undefined>;
}

export const vscodePickers: Pickers = {
  async pickMode(modes) {
    const pick = await vscode.window.showQuickPick(
      (modes?.availableModes ?? []).map((m) => ({ label: m.name, description: m.id === modes?.currentModeId ? "current" : m.id, detail: m.description ?? undefined, id: m.id })),
      { title: "Agent Bridge: permission mode" },
    );
    return pick?.id;
  },

  async confirmBypass() {
    const confirm = "Bypass permissions";
    const answer = await vscode.window.showWarningMessage(
      "Run every tool call without asking?",
      { modal: true, detail: "In Bypass permissions mode the agent runs commands, edits and deletes files without asking you first, until you change the mode again." },
      confirm,
    );
    return answer === confirm;
  },

  async pickModel(models) {
    const current = models?.currentModelId;
    const items: (vscode.QuickPickItem & { id?: string })[] = (models?.availableModels ?? []).map((m) => ({
      label: m.name,
      description: m.modelId === current ? `${m.modelId} · current` : m.modelId,
      detail: m.description ?? undefined,
      id: m.modelId,
    }));
    items.push({ label: "Another model…", description: "type a model id" });
    const pick = await vscode.window.showQuickPick(items, { title: "Agent Bridge: model for this session", placeHolder: current ? `Now: ${current}` : undefined });
    if (!pick) return undefined;
    return pick.id ?? (await vscode.window.showInputBox({ title: "Agent Bridge: model id", prompt: "e.g. claude-sonnet-4-5", value: current }))?.trim();
  },

  async pickStoredSession(stored, cwd, current, open) {
    const items = stored
      .filter((s) => s.sessionId !== current)
      .map((s) => ({
        label: s.title?.trim() || "(no prompt yet)",
        description: `${describeTime(s.updatedAt)}${open?.has(s.sessionId) ? " · open in a tab" : ""}`,
        detail: s.sessionId,
        sessionId: s.sessionId,
      }));
    if (!items.length) {
      void vscode.window.showInformationMessage(`Agent Bridge: no earlier sessions in ${cwd}.`);
      return undefined;
    }
    const pick = await vscode.window.showQuickPick(items, { title: "Agent Bridge: resume a session", placeHolder: "Sessions of this folder, newest first", matchOnDetail: true });
    return pick?.sessionId;
  },
};

function describeTime(iso: string | null | undefined): string {
  const time = iso ? Date.parse(iso) : Number.NaN;
  return Number.isNaN(time) ? "" : new Date(time).toLocaleString();
}
