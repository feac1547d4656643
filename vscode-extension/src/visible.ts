/**
 * Text a person is shown, with every character that could hide or reorder something escaped: the bridge's own
 * `bridge/visible.py`, kept the same (controls as `\x1b`, bidi controls, zero-width and other format characters,
 * look-alike spaces, line separators as `\u{202e}`). The bridge escapes what it sends; the panel escapes again
 * whatever it draws from the wire (a path, a diff's lines, a trust item), so an older bridge or a field it
 * missed can't reorder a question (attack round 34: a hook's bidi controls read as a comment on the trust card).
 * Escaping is idempotent: what it writes hides nothing. No `vscode`, so the webview and the unit tests use it.
 */

// Controls, format characters (bidi, zero-width), line and paragraph separators, private, unassigned and lone
// surrogates, spaces other than the space, variation selectors, and the characters that draw as nothing without
// being format ones.
const hidden = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cn}\p{Cs}]|(?! )\p{Zs}|\p{Variation_Selector}|\u034f|\u115f|\u1160|\u17b4|\u17b5|\u180e|\u3164|\uffa0|\u2800/gu;

function escape(char: string): string {
  const code = char.codePointAt(0) ?? 0;
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u{${code.toString(16)}}`;
}

/** `text` with every hiding character escaped; `keepNewlines` / `keepTabs`: those stay real (a block, code). */
export function visible(text: string, { keepNewlines = false, keepTabs = false } = {}): string {
  return text.replace(hidden, (char) => ((keepNewlines && char === "\n") || (keepTabs && char === "\t") ? char : escape(char)));
}

/** The one-line form of `text`, as the bridge's titles: visible, line breaks as ` ⏎ `, a run of 16 or more spaces
 * counted (`⟨300 spaces⟩`), so a line shown whole can't push what follows out of sight with blanks. */
export function oneLine(text: string): string {
  return visible(text.replace(/ {16,}/g, (run) => ` ⟨${run.length} spaces⟩ `).replace(/\r?\n/g, " ⏎ "));
}
