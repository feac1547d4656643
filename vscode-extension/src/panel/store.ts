import { Emitter } from "../events";
import { initialState, type PanelAction, type PanelState, reduce } from "./state";

/** The host's copy of the panel state: every action is reduced here and forwarded to the webview. */
export class PanelStore {
  private current: PanelState = initialState();
  private readonly actions = new Emitter<PanelAction>();
  readonly onAction = this.actions.event;

  get state(): PanelState {
    return this.current;
  }

  dispatch(action: PanelAction): void {
    this.current = reduce(this.current, action);
    this.actions.fire(action);
  }

  dispose(): void {
    this.actions.dispose();
  }
}
