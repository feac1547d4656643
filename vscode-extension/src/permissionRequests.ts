import type { CancellationTokenLike } from "./connection";
import { Emitter } from "./events";
import {
  cancelledOutcome,
  type DiffContent,
  isRejectKind,
  type PermissionOption,
  type RequestPermissionParams,
  type RequestPermissionResult,
  selected,
} from "./protocol";

export interface PendingPermission {
  /** Our own id for the request (the JSON-RPC id is not exposed by the connection). */
  id: string;
  params: RequestPermissionParams;
  /** The proposed edits, when the request is for one. */
  diffs: DiffContent[];
}

/** answered: the user chose; withdrawn: the bridge sent `$/cancelRequest` (the card must disappear). */
export interface PermissionSettled {
  id: string;
  how: "answered" | "withdrawn";
  option?: PermissionOption;
}

/**
 * Pending `session/request_permission` requests. The UI (panel card, notification, diff editor) answers them
 * by id; whichever answers first wins, later answers are ignored.
 */
export class PermissionRequests {
  private readonly added = new Emitter<PendingPermission>();
  private readonly settled = new Emitter<PermissionSettled>();
  readonly onAdded = this.added.event;
  readonly onSettled = this.settled.event;

  /** The text of a request's edit as the user changed it (the diff editor's right side), if they did. */
  editedText: (id: string) => string | undefined = () => undefined;

  private nextId = 1;
  private readonly pending = new Map<string, { request: PendingPermission; resolve: (r: RequestPermissionResult) => void }>();

  /** The request handler: resolves when the user answers or the bridge withdraws the request. */
  handle(params: RequestPermissionParams, token?: CancellationTokenLike): Promise<RequestPermissionResult> {
    const id = `perm-${this.nextId++}`;
    const diffs = (params.toolCall.content ?? []).filter((c): c is DiffContent => c.type === "diff");
    const request: PendingPermission = { id, params, diffs };
    return new Promise((resolve) => {
      this.pending.set(id, { request, resolve });
      if (token?.isCancellationRequested) {
        this.withdraw(id);
        return;
      }
      token?.onCancellationRequested(() => this.withdraw(id));
      this.added.fire(request);
    });
  }

  /** An allow answer carries the user's edit of the proposed change, wherever it was given. */
  answer(id: string, optionId: string, feedback?: string): boolean {
    const entry = this.pending.get(id);
    const option = entry?.request.params.options.find((o) => o.optionId === optionId);
    if (!entry || !option) return false;
    const edited = isRejectKind(option.kind) ? undefined : this.editedText(id);
    this.pending.delete(id);
    entry.resolve(selected(optionId, feedback, edited));
    this.settled.fire({ id, how: "answered", option });
    return true;
  }

  /** Answers with the first option of one of `kinds` (the diff editor's accept/reject). */
  answerWithKind(id: string, kinds: readonly PermissionOption["kind"][], feedback?: string): boolean {
    const option = this.get(id)?.params.options.find((o) => kinds.includes(o.kind));
    return option ? this.answer(id, option.optionId, feedback) : false;
  }

  get(id: string): PendingPermission | undefined {
    return this.pending.get(id)?.request;
  }

  all(): PendingPermission[] {
    return [...this.pending.values()].map((e) => e.request);
  }

  /** The session went away: answer everything `cancelled` so nothing hangs. */
  cancelAll(): void {
    for (const [id, entry] of [...this.pending]) {
      this.pending.delete(id);
      entry.resolve(cancelledOutcome);
      this.settled.fire({ id, how: "withdrawn" });
    }
  }

  dispose(): void {
    this.cancelAll();
    this.added.dispose();
    this.settled.dispose();
  }

  private withdraw(id: string): void {
    const entry = this.pending.get(id);
    if (!entry) return;
    this.pending.delete(id);
    entry.resolve(cancelledOutcome);
    this.settled.fire({ id, how: "withdrawn" });
  }
}

/**
 * The options in the order they are offered: allow once first, then reject, then the "always" ones. Nothing
 * that saves a rule is ever first (the default), whatever the bridge's order.
 */
export function orderedOptions(options: PermissionOption[]): PermissionOption[] {
  const rank = (o: PermissionOption): number => ["allow_once", "reject_once", "allow_always", "reject_always"].indexOf(o.kind);
  return [...options].sort((a, b) => rank(a) - rank(b));
}
