import type { AgentConnection, CancellationTokenLike } from "../src/connection";
import { Emitter } from "../src/events";

interface SentRequest {
  method: string;
  params: unknown;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/** An in-memory AgentConnection: records what the client sends and lets the test play the bridge. */
export class FakeConnection implements AgentConnection {
  readonly requests: SentRequest[] = [];
  readonly notifications: { method: string; params: unknown }[] = [];
  private readonly notificationHandlers = new Map<string, (params: unknown) => void>();
  private readonly requestHandlers = new Map<string, (params: unknown, token: CancellationTokenLike) => unknown>();
  /** Answers for requests by method, applied at once (others stay pending until resolved by the test). */
  readonly autoAnswer = new Map<string, (params: unknown) => unknown>();

  sendRequest<R>(method: string, params: unknown): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const auto = this.autoAnswer.get(method);
      if (auto) {
        resolve(auto(params) as R);
        return;
      }
      this.requests.push({ method, params, resolve: resolve as (v: unknown) => void, reject });
    });
  }

  sendNotification(method: string, params: unknown): void {
    this.notifications.push({ method, params });
  }

  onNotification(method: string, handler: (params: unknown) => void) {
    this.notificationHandlers.set(method, handler);
    return { dispose: () => this.notificationHandlers.delete(method) };
  }

  onRequest(method: string, handler: (params: unknown, token: CancellationTokenLike) => unknown) {
    this.requestHandlers.set(method, handler);
    return { dispose: () => this.requestHandlers.delete(method) };
  }

  /** The bridge sends a notification. */
  notify(method: string, params: unknown): void {
    this.notificationHandlers.get(method)?.(params);
  }

  /** The bridge sends a request; `cancel()` plays `$/cancelRequest`. */
  request(method: string, params: unknown): { result: Promise<unknown>; cancel: () => void } {
    const cancelled = new Emitter<undefined>();
    let isCancelled = false;
    const token: CancellationTokenLike = {
      get isCancellationRequested() {
        return isCancelled;
      },
      onCancellationRequested: (listener) => cancelled.event(listener),
    };
    const handler = this.requestHandlers.get(method);
    if (!handler) throw new Error(`no handler for ${method}`);
    const result = Promise.resolve(handler(params, token));
    return {
      result,
      cancel: () => {
        isCancelled = true;
        cancelled.fire(undefined);
      },
    };
  }

  pending(method: string): SentRequest[] {
    return this.requests.filter((r) => r.method === method);
  }
}
