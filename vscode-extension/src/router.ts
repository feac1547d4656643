/**
 * Every message the conversation webview sends, routed once: one table from the message's `type` to its
 * handler. The table's type makes it exhaustive — a new `FromWebview` kind does not compile until it has a
 * handler here — and a message of no known type (an older webview, a typo) is logged and dropped.
 */
import * as vscode from "vscode";
import type { Logger } from "./conversation";
import type { Conversations } from "./conversations";
import type { EditorContext } from "./editorContext";
import type { FromWebview } from "./panel/messages";
import type { ConversationView } from "./panel/provider";
import type { WorkspaceFiles } from "./panel/workspaceFiles";
import type { PermissionRequests } from "./permissionRequests";
import type { PermissionPrompter } from "./permissions";
import type { ContentBlock } from "./protocol";
import type { CheckpointActions } from "./review";

export type WebviewRoutes = { [K in FromWebview["type"]]: (message: Extract<FromWebview, { type: K }>) => unknown };

export interface RouteDeps {
  view: ConversationView;
  files: WorkspaceFiles;
  editorContext: EditorContext;
  conversations: Conversations;
  permissions: PermissionRequests;
  prompter: PermissionPrompter;
  checkpoints: CheckpointActions;
  log: Logger;
}

export function webviewRoutes({ view, files, editorContext, conversations, permissions, prompter, checkpoints }: RouteDeps): WebviewRoutes {
  const shown = (): Conversations["active"] => conversations.active;
  const postContext = (): void => view.post({ type: "context", label: editorContext.label(), problems: editorContext.problemCount() });
  return {
    ready: () => {
      view.post({ type: "workspace", folders: files.folders() });
      postContext();
      view.replay();
    },
    submit: async (msg) => {
      // The mentions and problems become content blocks here, where the files are.
      const extra: ContentBlock[] = [...(msg.extra ?? []), ...(msg.images ?? [])];
      for (const mention of msg.mentions ?? []) {
        const block = await files.mentionBlock(mention).catch(() => undefined);
        if (block) extra.push(block);
      }
      if (msg.attachProblems) {
        const problems = editorContext.problems();
        if (problems) extra.push(problems);
      }
      conversations.submit(msg.text, msg.attachContext, extra);
    },
    cancel: () => shown().cancel(),
    cancelToolCall: (msg) => shown().cancelToolCall(msg.toolCallId),
    permission: (msg) => permissions.answer(msg.id, msg.optionId, msg.feedback),
    openDiff: (msg) => prompter.showDiff(msg.id),
    setMode: (msg) => shown().setMode(msg.modeId),
    newSession: () => conversations.open(),
    switchSession: (msg) => conversations.switchTo(msg.id),
    closeSession: (msg) => conversations.close(msg.id),
    compact: () => conversations.submit("/compact", false),
    openFile: async (msg) => {
      if (!(await files.open(msg.path, msg.line))) view.post({ type: "fileNotFound", path: msg.path });
    },
    findFiles: async (msg) => view.post({ type: "files", requestId: msg.requestId, files: await files.find(msg.query) }),
    checkPaths: (msg) => files.check(msg.paths, (status) => view.post({ type: "paths", status })),
    copy: (msg) => vscode.env.clipboard.writeText(msg.text),
    // Only the extension's own commands (the welcome's buttons, the model name) and Workspace Trust's manager.
    rewindPreview: (msg) => checkpoints.preview(msg),
    rewindConfirm: (msg) => checkpoints.confirm(msg),
    fork: (msg) => checkpoints.fork(msg),
    showChanges: (msg) => checkpoints.showChanges(msg),
    review: (msg) => checkpoints.review(msg),
    openChange: (msg) => checkpoints.openChange(msg),
    command: (msg) => (/^agentBridge\.\w+$/.test(msg.command) || msg.command === "workbench.trust.manage" ? vscode.commands.executeCommand(msg.command) : undefined),
  };
}

/** Hands `message` to its handler; a handler's failure is logged, never thrown into the webview's event. */
export function route(routes: WebviewRoutes, message: FromWebview, log: Logger): void {
  const handler = Object.hasOwn(routes, message.type) ? (routes[message.type] as (m: FromWebview) => unknown) : undefined;
  if (!handler) {
    log.warn(`The panel sent a message of unknown type ${JSON.stringify((message as { type?: unknown }).type)}: ignored`);
    return;
  }
  Promise.resolve()
    .then(() => handler(message))
    .catch((err: unknown) => log.error(`Handling the panel's ${message.type}: ${err instanceof Error ? err.message : String(err)}`));
}
