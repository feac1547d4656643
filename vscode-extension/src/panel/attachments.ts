/**
 * A prompt as the panel shows it: its text, and a chip per attached block (selection, file, mention,
 * problems) that opens the file at the line. Pure (no `vscode`): file URIs are parsed with node's URL.
 */
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import type { ContentBlock } from "../protocol";
import type { Attachment } from "./state";

export function describePrompt(prompt: ContentBlock[]): { text: string; attachments: Attachment[] } {
  const text = prompt.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("\n");
  let images = 0;
  const attachments = prompt.flatMap((b): Attachment[] => {
    if (b.type === "image") return [{ label: `image ${++images}`, image: `data:${b.mimeType};base64,${b.data}` }];
    if (b.type === "resource") return [attachmentOf(b.resource.uri)];
    if (b.type === "resource_link") return [{ ...attachmentOf(b.uri), label: b.name || attachmentOf(b.uri).label }];
    return [];
  });
  return { text, attachments };
}

/** `file:///w/a.py#L3-5` → "a.py:3-5" opening a.py at line 3; `#problems` → "a.py problems". */
export function attachmentOf(uri: string): Attachment {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return { label: uri };
  }
  const fragment = decodeURIComponent(url.hash.replace(/^#/, ""));
  const name = path.posix.basename(decodeURIComponent(url.pathname)) || uri;
  const lines = /^L(\d+)(?:-(\d+))?$/.exec(fragment);
  const label = lines ? `${name}:${fragment.slice(1)}` : fragment ? `${name} ${fragment}` : name;
  if (url.protocol !== "file:") return { label };
  url.hash = "";
  let file: string;
  try {
    file = fileURLToPath(url);
  } catch {
    return { label };
  }
  return lines ? { label, path: file, line: Number(lines[1]) } : { label, path: file };
}
