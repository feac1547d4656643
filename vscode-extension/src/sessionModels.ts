import type * as vscode from "vscode";

/** The model each session of this folder ran, remembered by this editor: a resumed session goes on with it. */
export function sessionModels(state: vscode.Memento): { remember: (sessionId: string, model: string) => void; recall: (sessionId: string) => string | undefined } {
  const key = "agentBridge.sessionModels";
  const all = (): Record<string, string> => state.get<Record<string, string>>(key) ?? {};
  return {
    remember: (sessionId, model) => {
      // The newest 200 are plenty: older sessions go back to the default.
      const others = Object.entries(all()).filter(([id]) => id !== sessionId);
      void state.update(key, Object.fromEntries([...others, [sessionId, model]].slice(-200)));
    },
    recall: (sessionId) => all()[sessionId],
  };
}

