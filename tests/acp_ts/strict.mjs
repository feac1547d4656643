// A strict ACP v1 oracle from the official TypeScript SDK's own zod types (dist/v1/schema/zod.gen.js).
//
// The SDK's schemas are lenient on purpose: unknown fields are stripped, a malformed optional field is replaced by
// its default, invalid list items are dropped — so that a client survives a sloppy agent. A conformance test needs
// the opposite: each message the agent sends must parse, and the parse must give back exactly what was sent. Any
// difference (a field the schema does not know, a value it had to salvage, an item it dropped) is a violation.
// Inside `_meta` anything goes (ACP's extension point). Shares no code with the bridge (nor with tests/acp/strict.py).

const zodModule = new URL("../schema/zod.gen.js", import.meta.resolve("@agentclientprotocol/sdk"));
const z = await import(zodModule.href);

/** Agent -> client requests and notifications of ACP v1 (the SDK's CLIENT_METHODS, plus `$/cancel_request`). */
const REQUESTS = {
  "session/request_permission": z.zRequestPermissionRequest,
  "fs/read_text_file": z.zReadTextFileRequest,
  "fs/write_text_file": z.zWriteTextFileRequest,
  "terminal/create": z.zCreateTerminalRequest,
  "terminal/output": z.zTerminalOutputRequest,
  "terminal/release": z.zReleaseTerminalRequest,
  "terminal/wait_for_exit": z.zWaitForTerminalExitRequest,
  "terminal/kill": z.zKillTerminalRequest,
  "elicitation/create": z.zCreateElicitationRequest,
};
const NOTIFICATIONS = {
  "session/update": z.zSessionNotification,
  "elicitation/complete": z.zCompleteElicitationNotification,
  "$/cancel_request": z.zCancelRequestNotification,
};
/** The agent's answers to the client's requests, by the request's method. */
const RESPONSES = {
  initialize: z.zInitializeResponse,
  authenticate: z.zAuthenticateResponse,
  logout: z.zLogoutResponse,
  "session/new": z.zNewSessionResponse,
  "session/load": z.zLoadSessionResponse,
  "session/list": z.zListSessionsResponse,
  "session/delete": z.zDeleteSessionResponse,
  "session/resume": z.zResumeSessionResponse,
  "session/close": z.zCloseSessionResponse,
  "session/set_mode": z.zSetSessionModeResponse,
  "session/set_config_option": z.zSetSessionConfigOptionResponse,
  "session/prompt": z.zPromptResponse,
};
const ENVELOPE = {
  request: ["jsonrpc", "id", "method", "params"],
  notification: ["jsonrpc", "method", "params"],
  response: ["jsonrpc", "id", "result"],
  error: ["jsonrpc", "id", "error"],
};

/** Where `parsed` (the schema's reading) is not `sent`; nothing is compared inside `_meta`. */
export function differences(sent, parsed, where = "") {
  if (where === "_meta" || where.endsWith("._meta")) return [];
  if (Array.isArray(sent) && Array.isArray(parsed)) {
    if (sent.length !== parsed.length) return [`${where}: ${sent.length - parsed.length} invalid item(s) dropped`];
    return sent.flatMap((item, index) => differences(item, parsed[index], `${where}.${index}`));
  }
  if (isObject(sent) && isObject(parsed)) {
    const problems = [];
    for (const key of Object.keys(sent)) {
      const here = where ? `${where}.${key}` : key;
      if (!(key in parsed)) problems.push(`${here}: unknown field (not in the schema)`);
      else problems.push(...differences(sent[key], parsed[key], here));
    }
    return problems; // (a key the schema adds is its default for one not sent: no difference on the wire)
  }
  return Object.is(sent, parsed) ? [] : [`${where}: ${JSON.stringify(sent)} is not valid here (read as ${JSON.stringify(parsed)})`];
}

function isObject(value) {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Problems of `payload` as `schema`, strictly. */
export function checkPayload(schema, payload) {
  const result = schema.safeParse(payload);
  if (!result.success) return result.error.issues.map((issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`);
  return differences(payload, result.data);
}

/** Feed it every message in wire order: `outgoing` (client -> agent), `incoming` (agent -> client). */
export class StrictValidator {
  violations = [];
  seen = 0;
  #asked = new Map();

  outgoing(message) {
    if ("method" in message && "id" in message) this.#asked.set(message.id, message.method);
  }

  incoming(message) {
    this.seen += 1;
    const problems = this.problems(message);
    if (problems.length) this.violations.push({ message, problems });
  }

  problems(message) {
    if (!isObject(message) || message.jsonrpc !== "2.0") return ["not a JSON-RPC 2.0 message"];
    const kind = "method" in message ? ("id" in message ? "request" : "notification") : "error" in message ? "error" : "response";
    const extra = Object.keys(message).filter((key) => !ENVELOPE[kind].includes(key));
    if (extra.length) return [`envelope: unexpected ${extra.join(", ")}`];
    if (kind === "error") return checkPayload(z.zError, message.error);
    if (kind === "response") {
      const method = this.#asked.get(message.id);
      if (method === undefined) return [`a response to ${JSON.stringify(message.id)}, which the client never asked`];
      const schema = RESPONSES[method];
      return schema ? checkPayload(schema, message.result) : [`${method}: not an ACP v1 method`];
    }
    const schema = (kind === "request" ? REQUESTS : NOTIFICATIONS)[message.method];
    if (!schema) return [`${message.method}: not an ACP v1 ${kind} from the agent`];
    return checkPayload(schema, message.params ?? {});
  }
}
