/**
 * A permission question as one notification line: the whole truth when the bridge sends it (`_meta.question`:
 * the exact command, every line; the reason; each path whose resolution differs), a folder-trust question with
 * every item verbatim, else (an older bridge) the title as plain text. Never cut at a width: a notification
 * that is long unfolds. No `vscode`, so the unit tests read it.
 */
import { isQuestion, isRejectKind, isTrust, type PermissionOption, type RequestPermissionParams } from "./protocol";

/** Beyond this the text says how much more there is (the bridge caps its own text at about the same). */
export const maxQuestionChars = 4000;

export function questionText(params: RequestPermissionParams): string {
  const meta = params._meta;
  const who = meta?.agent?.description ? `Sub-agent “${meta.agent.description}” asks` : "Agent Bridge asks";
  const trust = meta?.trust;
  if (isTrust(trust)) {
    const items = trust.items.map((i) => `${i.file} (${i.kind}): ${oneLine(i.text)}`).join("; ");
    return cap(`Agent Bridge: trust the folder ${trust.folder}? It would enable ${items || "nothing more"}.`);
  }
  const question = meta?.question;
  if (isQuestion(question)) {
    const subject = typeof question.command === "string" ? ` to run: ${oneLine(question.command)}` : `: ${plain(params.toolCall.title)}`;
    const paths = question.paths.map((p) => `${p.named} → ${p.resolved}`).join(", ");
    const reason = plain(question.reason || (meta?.reason ?? ""));
    return cap(`${who}${subject}${paths ? ` (${paths})` : ""}${reason ? ` — ${reason}` : ""}`);
  }
  const reason = meta?.reason ? ` — ${plain(meta.reason)}` : "";
  return cap(`${who}: ${plain(params.toolCall.title)}${reason}`);
}

/** An option as the notification's "More…" list shows it: an "always" one with every rule it saves and where. */
export function optionDetail(option: PermissionOption): string {
  if (option.kind === "allow_once") return "this call only";
  const rules = option._meta?.rules?.length ? option._meta.rules : option._meta?.rule ? [option._meta.rule] : [];
  if (!rules.length) return isRejectKind(option.kind) ? "" : "saves a rule";
  const where = option._meta?.destination ? ` in ${option._meta.destination}` : "";
  return `saves ${rules.join(", ")}${where}`;
}

/** Markdown code ticks are the panel's; a notification shows text. */
export function plain(title: string): string {
  return oneLine(title.replace(/`+/g, ""));
}

/** Line breaks as the wire's ` ⏎ `, so a multi-line command stays one line and every line is in it. */
function oneLine(text: string): string {
  return text.replace(/\r?\n/g, " ⏎ ").trim();
}

function cap(text: string): string {
  return text.length > maxQuestionChars ? `${text.slice(0, maxQuestionChars)}… (+${text.length - maxQuestionChars} more characters)` : text;
}
