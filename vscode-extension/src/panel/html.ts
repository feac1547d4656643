/**
 * The conversation webview's document. Pure (no `vscode`), so the render bench and the screenshot script
 * load exactly what VS Code loads. Strict CSP: the one script has the nonce; styles only from the
 * extension's own files (no inline style attributes or `<style>`), images only from there or data: URIs.
 */
export interface PanelHtmlParts {
  /** `webview.cspSource`: the origin the script, style and fonts come from. */
  cspSource: string;
  nonce: string;
  scriptUri: string;
  styleUri: string;
  /** Extra CSP directives (the bench's worker); never set by the extension. */
  extraCsp?: string[];
}

export function panelHtml(p: PanelHtmlParts): string {
  const csp = [
    "default-src 'none'",
    `style-src ${p.cspSource}`,
    `script-src 'nonce-${p.nonce}'`,
    `img-src ${p.cspSource} data:`,
    `font-src ${p.cspSource}`,
    ...(p.extraCsp ?? []),
  ].join("; ");
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link href="${p.styleUri}" rel="stylesheet">
<title>Agent Bridge</title>
</head>
<body>
<header id="toolbar">
  <label class="mode">Mode <select id="mode" title="Permission mode"></select></label>
  <span id="connection" class="connection"></span>
</header>
<div id="banner" hidden></div>
<main id="log" aria-live="polite"></main>
<button id="jump" class="jump" hidden title="Scroll to the latest message">↓ Latest</button>
<section id="plan" hidden></section>
<footer id="composer">
  <div class="context-row">
    <label id="attach-label" hidden><input type="checkbox" id="attach"> Attach <span id="context-name"></span></label>
  </div>
  <textarea id="input" rows="3" placeholder="Ask the agent… (Enter to send, Shift+Enter for a new line)"></textarea>
  <div class="buttons">
    <button id="stop" class="secondary" disabled title="Cancel the turn (Escape); press twice to force">Stop</button>
    <button id="send" title="Send (while a turn runs: interrupt it with this message)">Send</button>
  </div>
</footer>
<script nonce="${p.nonce}" src="${p.scriptUri}"></script>
</body>
</html>`;
}
