import type { AgentConnection } from "./connection";
import type { Disposable } from "./events";
import type { PermissionRequests } from "./permissionRequests";
import {
  Method,
  type NewSessionParams,
  type NewSessionResult,
  parseSessionNotification,
  type RequestPermissionParams,
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

  async newSession(cwd: string): Promise<AgentSession> {
    const params: NewSessionParams = { cwd, mcpServers: [] };
    const result = await this.connection.sendRequest<NewSessionResult>(Method.sessionNew, params);
    const session = new AgentSession(this.connection, result.sessionId, result.modes ?? undefined);
    this.sessions.set(result.sessionId, session);
    return session;
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
