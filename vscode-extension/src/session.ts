import type { AgentConnection } from "./connection";
import { Emitter } from "./events";
import {
  type CancelParams,
  type ChangesParams,
  type ChangesResult,
  type ForkParams,
  type ForkResult,
  type ReviewParams,
  type ReviewResult,
  type RewindOutcome,
  type RewindParams,
  type RewindPreview,
  type CancelToolCallParams,
  type ContentBlock,
  Method,
  type PromptParams,
  type PromptResult,
  type SessionModels,
  type SessionModes,
  type SessionUpdate,
  type SetModelParams,
  type SetModeParams,
  type StopReason,
} from "./protocol";

/** idle: no turn; running: a turn streams; cancelling: a cancel was sent and the turn is unwinding. */
export type TurnPhase = "idle" | "running" | "cancelling";

export interface TurnStarted {
  turnId: number;
  prompt: ContentBlock[];
}
/**
 * `interrupted`: the turn got no answer because the bridge went away (what happened, for people). `code`: the
 * JSON-RPC error's code when the bridge answered one (`authRequired`: no usable API key).
 */
export type TurnEnded = { turnId: number; stopReason: StopReason } | { turnId: number; error: string; code?: number } | { turnId: number; interrupted: string };

/** How long a turn whose connection closed waits to hear how the bridge ended (`abandon`), which the client
 * learns up to 1.5 s after the pipe closes. */
export const lostConnectionGraceMs = 3000;

/** What `cancel()` did: nothing to cancel, a plain cancel, or a forced one (second press while unwinding). */
export type CancelKind = "idle" | "cancel" | "force";

/**
 * One bridge session: its turns, its mode and its cancel state. Submitting while a turn runs sends the new
 * prompt at once (the bridge's `interrupt`); the earlier prompt then answers `cancelled`.
 */
export class AgentSession {
  private readonly updates = new Emitter<SessionUpdate>();
  private readonly started = new Emitter<TurnStarted>();
  private readonly ended = new Emitter<TurnEnded>();
  private readonly phases = new Emitter<TurnPhase>();
  private readonly named = new Emitter<{ turnId: number; bridgeTurnId: string }>();
  readonly onUpdate = this.updates.event;
  /** The bridge named a turn in its answer (before the turn's end is told): what a rewind, fork or Changes take. */
  readonly onTurnNamed = this.named.event;
  readonly onTurnStarted = this.started.event;
  readonly onTurnEnded = this.ended.event;
  readonly onPhase = this.phases.event;

  private lastTurnId: number;
  private currentTurnId = 0;
  /** Turns sent and not answered yet, oldest first: the bridge answers them in order, and every update it
   * sends before the oldest one's answer belongs to that one (a prompt sent mid-turn waits for it). */
  private readonly openTurns: number[] = [];
  /** A turn given up for lost (the bridge died under it): its late answer is not reported again. */
  private abandonedTurnId = 0;
  private phaseValue: TurnPhase = "idle";
  /** Resolves a turn that lost its connection and waits for `abandon` to say why. */
  private abandonWaiter: (() => void) | undefined;

  /** `firstTurnId`: the turns before this one (a session reloaded into a panel that shows them). */
  constructor(
    private readonly connection: AgentConnection,
    readonly sessionId: string,
    private modesValue: SessionModes | undefined,
    private modelsValue?: SessionModels,
    firstTurnId = 0,
  ) {
    this.lastTurnId = firstTurnId;
  }

  /** The replay of a loaded session showed `turnId` turns: the next prompt is the one after them. */
  continueAfter(turnId: number): void {
    this.lastTurnId = Math.max(this.lastTurnId, turnId);
  }

  /**
   * The turn the update being delivered belongs to: the oldest unanswered one (undefined between turns, and
   * in a `session/load` replay, whose updates say their own turns).
   */
  get streamingTurn(): number | undefined {
    return this.openTurns[0];
  }

  get phase(): TurnPhase {
    return this.phaseValue;
  }

  get modes(): SessionModes | undefined {
    return this.modesValue;
  }

  get models(): SessionModels | undefined {
    return this.modelsValue;
  }

  /** Runs one turn; resolves when the bridge answers (never rejects: an error is a TurnEnded with `error`). */
  async prompt(prompt: ContentBlock[]): Promise<TurnEnded> {
    const turnId = ++this.lastTurnId;
    this.currentTurnId = turnId;
    this.openTurns.push(turnId);
    this.setPhase("running");
    this.started.fire({ turnId, prompt });
    // The bridge names the turn in its answer (what rewind-to-here, fork and a prompt's Changes take).
    const params: PromptParams = { sessionId: this.sessionId, prompt, _meta: { turnId: true } };
    let outcome: TurnEnded;
    try {
      const result = await this.connection.sendRequest<PromptResult>(Method.sessionPrompt, params);
      const named = result._meta?.turnId;
      if (typeof named === "string") this.named.fire({ turnId, bridgeTurnId: named });
      outcome = { turnId, stopReason: result.stopReason };
    } catch (err) {
      const message = errorMessage(err);
      if (!isConnectionLost(message)) outcome = { turnId, error: message, ...errorCode(err) };
      else {
        // The bridge went away: how (killed, exit code) comes a moment later, through `abandon`.
        await this.waitForAbandon(lostConnectionGraceMs);
        outcome = { turnId, interrupted: "the connection to the bridge closed" };
      }
    } finally {
      this.openTurns.splice(this.openTurns.indexOf(turnId), 1);
    }
    if (turnId === this.abandonedTurnId) return outcome;
    this.ended.fire(outcome);
    if (turnId === this.currentTurnId) this.setPhase("idle");
    return outcome;
  }

  /** First call cancels the running turn; a second one while it is still unwinding forces (kill at once). */
  cancel(): CancelKind {
    if (this.phaseValue === "idle") return "idle";
    const force = this.phaseValue === "cancelling";
    const params: CancelParams = force ? { sessionId: this.sessionId, _meta: { force: true } } : { sessionId: this.sessionId };
    // A connection that is already gone (the bridge exited) rejects: nothing is left to cancel then.
    void Promise.resolve(this.connection.sendNotification(Method.sessionCancel, params)).catch(() => undefined);
    this.setPhase("cancelling");
    return force ? "force" : "cancel";
  }

  /** Stops one running tool call alone (a sub-agent and everything it runs); the turn goes on. */
  cancelToolCall(toolCallId: string): void {
    const params: CancelToolCallParams = { sessionId: this.sessionId, toolCallId };
    void Promise.resolve(this.connection.sendNotification(Method.cancelToolCall, params)).catch(() => undefined);
  }

  /** The connection is gone: the running turn ends now, interrupted for `reason`, and its late answer is dropped. */
  abandon(reason: string): void {
    if (this.phaseValue === "idle") return;
    this.abandonedTurnId = this.currentTurnId;
    this.ended.fire({ turnId: this.currentTurnId, interrupted: reason });
    this.setPhase("idle");
    this.abandonWaiter?.();
  }

  private waitForAbandon(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.abandonWaiter = done;
    }).finally(() => (this.abandonWaiter = undefined));
  }

  /** The models as `session/load` answered them (the loaded session's own). */
  setModels(models: SessionModels): void {
    this.modelsValue = models;
  }

  async setModel(modelId: string): Promise<void> {
    const params: SetModelParams = { sessionId: this.sessionId, modelId };
    await this.connection.sendRequest<unknown>(Method.sessionSetModel, params);
    const known = this.modelsValue?.availableModels ?? [];
    const availableModels = known.some((m) => m.modelId === modelId) ? known : [...known, { modelId, name: modelId }];
    this.modelsValue = { currentModelId: modelId, availableModels };
  }

  /** The bridge's checkpoint methods (`_bridge/rewind`, `_bridge/changes`, `_bridge/keep`, `_bridge/undo`,
   * `_bridge/fork`): params without the session, which is this one. */
  async rewind(params: Omit<RewindParams, "sessionId">): Promise<RewindPreview | RewindOutcome> {
    return this.connection.sendRequest<RewindPreview | RewindOutcome>(Method.rewind, { sessionId: this.sessionId, ...params });
  }

  async changes(turnId?: string): Promise<ChangesResult> {
    const params: ChangesParams = { sessionId: this.sessionId, ...(turnId ? { turnId } : {}) };
    return this.connection.sendRequest<ChangesResult>(Method.changes, params);
  }

  async review(action: "keep" | "undo", params: Omit<ReviewParams, "sessionId">): Promise<ReviewResult> {
    return this.connection.sendRequest<ReviewResult>(action === "keep" ? Method.keep : Method.undo, { sessionId: this.sessionId, ...params });
  }

  async fork(turnId?: string): Promise<ForkResult> {
    const params: ForkParams = { sessionId: this.sessionId, ...(turnId ? { turnId } : {}) };
    return this.connection.sendRequest<ForkResult>(Method.fork, params);
  }

  async setMode(modeId: string): Promise<void> {
    const params: SetModeParams = { sessionId: this.sessionId, modeId };
    await this.connection.sendRequest<unknown>(Method.sessionSetMode, params);
  }

  /** Called by the client for each `session/update` addressed to this session. */
  handleUpdate(update: SessionUpdate): void {
    if (update.sessionUpdate === "current_mode_update" && this.modesValue) {
      this.modesValue = { ...this.modesValue, currentModeId: update.currentModeId };
    }
    this.updates.fire(update);
  }

  dispose(): void {
    for (const emitter of [this.updates, this.started, this.ended, this.phases, this.named]) emitter.dispose();
  }

  private setPhase(phase: TurnPhase): void {
    if (phase === this.phaseValue) return;
    this.phaseValue = phase;
    this.phases.fire(phase);
  }
}

/** vscode-jsonrpc's (and vscode-languageclient's) words for a request whose connection closed under it. */
export function isConnectionLost(err: unknown): boolean {
  const message = typeof err === "string" ? err : errorMessage(err);
  return /connection got disposed|not running|connection.*(closed|disposed)|pending response rejected/i.test(message);
}

/** An error as a person reads it: a connection that went away says so in our words, not the library's. */
export function describeError(err: unknown): string {
  return isConnectionLost(err) ? "the bridge is not running (it stopped or is restarting)" : errorMessage(err);
}

/** ACP's `auth_required`: no API key, or one the API refused. */
export const authRequired = -32000;

function errorCode(err: unknown): { code?: number } {
  const code = typeof err === "object" && err !== null && "code" in err ? err.code : undefined;
  return typeof code === "number" ? { code } : {};
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === "object" && err !== null && "message" in err) return String(err.message);
  return String(err);
}
