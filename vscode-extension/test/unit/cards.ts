/** A permission question's card as the panel draws it, from the request's params (shared by the card tests). */
import assert from "node:assert/strict";
import { initialState, type PanelAction, type PanelState, permissionCard, reduce } from "../../src/panel/state";
import type { RequestPermissionParams } from "../../src/protocol";
import { permissionHtml, type ViewContext } from "../../webview/items";

export const ctx: ViewContext = { folders: ["/w"], paths: () => undefined };

export function card(params: RequestPermissionParams): string {
  const state: PanelState = [
    { type: "sessionStarted", sessionId: params.sessionId } as PanelAction,
    { type: "turnStarted", turnId: 1, text: "t", attachments: [] } as PanelAction,
    { type: "permissionRequested", permission: permissionCard("p1", params) } as PanelAction,
  ].reduce(reduce, initialState());
  const item = state.items.find((i) => i.kind === "permission");
  assert.ok(item?.kind === "permission");
  return permissionHtml(item, ctx);
}
