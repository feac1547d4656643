import { createHash } from "node:crypto";
import type { ExtensionSettings } from "./settings";

/**
 * What a running bridge was started with: the server settings (`model` applies live, so it is left out) and a
 * digest of the API key — never the key itself, since this string is kept and compared. A new, changed or
 * removed key changes it, so the bridge restarts with the key it should have.
 */
export function serverKey(s: ExtensionSettings, apiKey: string | undefined): string {
  return JSON.stringify({ ...s, model: undefined, apiKey: apiKey ? keyDigest(apiKey) : null });
}

function keyDigest(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}
