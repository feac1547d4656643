import type { Disposable } from "./events";

/**
 * The few JSON-RPC operations the protocol client needs. Both `vscode-languageclient`'s LanguageClient and
 * `vscode-jsonrpc`'s MessageConnection satisfy it, so the same client code runs inside VS Code and in tests.
 */
export interface CancellationTokenLike {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => void): Disposable;
}

export interface AgentConnection {
  sendRequest<R>(method: string, params: unknown): Promise<R>;
  sendNotification(method: string, params: unknown): Promise<void> | void;
  onNotification(method: string, handler: (params: unknown) => void): Disposable;
  onRequest(method: string, handler: (params: unknown, token: CancellationTokenLike) => unknown): Disposable;
}
