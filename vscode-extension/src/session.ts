import type { AgentConnection } from "./connection";
import { Emitter } from "./events";
import {
  type CancelParams,
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
/** `interrupted`: the turn got no answer because the bridge went away (what happened, for people). */
export type TurnEnded = { turnId: number; stopReason: StopReason } | { turnId: number; error: string } | { turnId: number; interrupted: string };

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
  readonly onUpdate = this.updates.event;
  readonly onTurnStarted = this.started.event;
  readonly onTurnEnded = this.ended.event;
  readonly onPhase = this.phases.event;

  private lastTurnId: number;
  private currentTurnId = 0;
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
    this.setPhase("running");
    this.started.fire({ turnId, prompt });
    const params: PromptParams = { sessionId: this.sessionId, prompt };
    let outcome: TurnEnded;
    try {
      const result = await this.connection.sendRequest<PromptResult>(Method.sessionPrompt, params);
      outcome = { turnId, stopReason: result.stopReason };
    } catch (err) {
      const message = errorMessage(err);
      if (!isConnectionLost(message)) outcome = { turnId, error: message };
      else {
        // The bridge went away: how (killed, exit code) comes a moment later, through `abandon`.
        await this.waitForAbandon(lostConnectionGraceMs);
        outcome = { turnId, interrupted: "the connection to the bridge closed" };
      }
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

  async setModel(modelId: string): Promise<void> {
    const params: SetModelParams = { sessionId: this.sessionId, modelId };
    await this.connection.sendRequest<unknown>(Method.sessionSetModel, params);
    const known = this.modelsValue?.availableModels ?? [];
    const availableModels = known.some((m) => m.modelId === modelId) ? known : [...known, { modelId, name: modelId }];
    this.modelsValue = { currentModelId: modelId, availableModels };
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
    for (const emitter of [this.updates, this.started, this.ended, this.phases]) emitter.dispose();
  }

  private setPhase(phase: TurnPhase): void {
    if (phase === this.phaseValue) return;
    this.phaseValue = phase;
    this.phases.fire(phase);
  }
}

/** vscode-jsonrpc's words for a request whose connection closed under it. */
export function isConnectionLost(message: string): boolean {
  return /connection got disposed|not running|connection.*closed/i.test(message);
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === "object" && err !== null && "message" in err) return String(err.message);
  return String(err);
}
