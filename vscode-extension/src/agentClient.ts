import type { AgentConnection } from "./connection";
import type { Disposable } from "./events";
import type { PermissionRequests } from "./permissionRequests";
import {
  type ListSessionsParams,
  type ListSessionsResult,
  type LoadSessionParams,
  type LoadSessionResult,
  type McpServer,
  Method,
  type NewSessionParams,
  type NewSessionResult,
  parseSessionNotification,
  type RequestPermissionParams,
  type SessionModels,
  type SessionModes,
} from "./protocol";
import { AgentSession } from "./session";

/**
 * The protocol client: creates sessions, routes `session/update`s to them by id and hands
 * `session/request_permission` to the pending-permission queue. Transport-agnostic (see AgentConnection).
 */
export class AgentClient implements Disposable {
  private readonly sessions = new Map<string, AgentSession>();
  private readonly subscriptions: Disposable[];

  constructor(
    private readonly connection: AgentConnection,
    readonly permissions: PermissionRequests,
  ) {
    this.subscriptions = [
      connection.onNotification(Method.sessionUpdate, (params) => {
        const notification = parseSessionNotification(params);
        if (notification) this.sessions.get(notification.sessionId)?.handleUpdate(notification.update);
      }),
      connection.onRequest(Method.requestPermission, (params, token) =>
        permissions.handle(params as RequestPermissionParams, token),
      ),
    ];
  }

  async newSession(cwd: string, mcpServers: McpServer[] = []): Promise<AgentSession> {
    const params: NewSessionParams = { cwd, mcpServers };
    const result = await this.connection.sendRequest<NewSessionResult>(Method.sessionNew, params);
    const session = new AgentSession(this.connection, result.sessionId, result.modes ?? undefined, result.models ?? undefined);
    this.sessions.set(result.sessionId, session);
    return session;
  }

  /** The stored sessions of `cwd`, newest first (as the bridge orders them). */
  async listSessions(cwd: string): Promise<ListSessionsResult["sessions"]> {
    const params: ListSessionsParams = { cwd };
    const result = await this.connection.sendRequest<ListSessionsResult | null>(Method.sessionList, params);
    return Array.isArray(result?.sessions) ? result.sessions : [];
  }

  /**
   * Loads a stored session. The bridge replays its history as `session/update`s before it answers, so the
   * session is registered (and `attach` called, to subscribe to it) before the request goes out. On an error
   * the session is dropped again and the error thrown.
   */
  async loadSession(
    sessionId: string,
    cwd: string,
    modes: SessionModes | undefined,
    attach: (session: AgentSession) => void,
    mcpServers: McpServer[] = [],
    opts: { models?: SessionModels; firstTurnId?: number } = {},
  ): Promise<AgentSession> {
    const session = new AgentSession(this.connection, sessionId, modes, opts.models, opts.firstTurnId);
    this.sessions.set(sessionId, session);
    attach(session);
    const params: LoadSessionParams = { sessionId, cwd, mcpServers };
    try {
      const result = await this.connection.sendRequest<LoadSessionResult | null>(Method.sessionLoad, params);
      if (result?.models) session.setModels(result.models);
    } catch (err) {
      this.closeSession(session);
      throw err;
    }
    return session;
  }

  /** The bridge may let go of a session nobody shows any more (its MCP servers stop); a failure is no matter. */
  async endSession(sessionId: string): Promise<void> {
    await Promise.resolve(this.connection.sendRequest<unknown>(Method.sessionClose, { sessionId })).catch(() => undefined);
  }

  closeSession(session: AgentSession): void {
    this.sessions.delete(session.sessionId);
    session.dispose();
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
    for (const session of this.sessions.values()) session.dispose();
    this.sessions.clear();
  }
}
