/**
 * A permission question as one notification line: the whole truth when the bridge sends it (`_meta.question`:
 * the exact command, every line; the reason; each path whose resolution differs), a folder-trust question with
 * every item verbatim, else (an older bridge) the title as plain text. Never cut at a width: a notification
 * that is long unfolds. No `vscode`, so the unit tests read it.
 */
import { isQuestion, isRejectKind, isTrust, type PermissionOption, type RequestPermissionParams } from "./protocol";
import { oneLine, visible } from "./visible";

/** Beyond this the text says how much more there is (the bridge caps its own text at about the same). */
export const maxQuestionChars = 4000;
/** A marked part or the reason, after the command: each shown whole up to this. */
const maxPartChars = 500;

export function questionText(params: RequestPermissionParams): string {
  const meta = params._meta;
  const who = meta?.agent?.description ? `Sub-agent “${oneLine(meta.agent.description)}” asks` : "Agent Bridge asks";
  const trust = meta?.trust;
  if (isTrust(trust)) {
    const items = trust.items.map((i) => `${visible(i.file)} (${i.own === "yes" ? "your hook" : visible(i.kind)}): ${oneLine(i.text)}`).join("; ");
    return cap(`Agent Bridge: trust the folder ${visible(trust.folder)}? It would enable ${items || "nothing more"}.`);
  }
  const question = meta?.question;
  if (isQuestion(question)) {
    const paths = question.paths.map((p) => `${visible(p.named)} → ${visible(p.resolved)}`).join(", ");
    const reason = plain(question.reason || (meta?.reason ?? ""));
    const after = `${paths ? ` (${paths})` : ""}${reason ? ` — ${cap(reason, maxPartChars)}` : ""}`;
    if (typeof question.command !== "string") return cap(`${who}: ${plain(params.toolCall.title)}${after}`);
    // A run of blanks counts as one (`⟨5000 spaces⟩`); a command still too long is cut, and the parts that make it
    // ask are then named after the cut: both had pushed `; rm -rf ./victim` out of the notification (attack round
    // 34). Marks count code points.
    const line = oneLine(question.command);
    const chars = Array.from(question.command);
    const asks = question.marks.filter((m) => m.end > m.start).map((m) => cap(oneLine(chars.slice(m.start, m.end).join("")), maxPartChars));
    const about = line.length > maxQuestionChars && asks.length ? ` — it asks about ${asks.join(", ")}` : "";
    return `${who} to run: ${cap(line)}${about}${after}`;
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

function cap(text: string, limit = maxQuestionChars): string {
  return text.length > limit ? `${text.slice(0, limit)}… (+${text.length - limit} more characters)` : text;
}
