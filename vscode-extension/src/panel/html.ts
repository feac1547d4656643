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
<nav id="tabs" role="tablist" aria-label="Conversations" hidden></nav>
<header id="toolbar">
  <label class="mode">Mode <select id="mode" title="Permission mode"></select></label>
  <button id="model" class="model" hidden title="The model this session runs: click to choose another"></button>
  <button id="changes" type="button" class="secondary changes-button" title="What the agent changed in this session that you have not kept yet: keep or undo per file and per hunk">Changes</button>
  <span id="connection" class="connection" role="status"></span>
</header>
<div id="mode-desc" class="mode-desc" hidden></div>
<div id="bypass" class="bypass" role="alert" hidden>⚠ <strong>Bypass permissions</strong>: every command, edit and deletion runs without asking. <button type="button" class="secondary" data-mode="default">Back to Default</button></div>
<div id="trust-banner" class="trust-banner" role="status" hidden><strong>Restricted Mode</strong>: this folder is not trusted, so its own agent configuration is off — hooks, <code>env</code>, allow rules, the default mode, extra directories, sandbox and network settings and MCP servers of <code>.agent-bridge/</code> and <code>.claude/</code>. The agent still works and asks before it acts. <button type="button" class="secondary" data-command="workbench.trust.manage">Manage Workspace Trust</button></div>
<div id="key-banner" class="key-banner" role="status" hidden>No API key is set. <button type="button" data-command="agentBridge.setApiKey">Set API key</button> <button type="button" class="secondary" data-command="agentBridge.tryOffline">Try it offline</button></div>
<div id="banner" hidden></div>
<div id="log-wrap">
  <section id="welcome" hidden>
    <h2>Agent Bridge</h2>
    <p>A coding agent in this panel: it reads your workspace, edits files and runs commands. Every edit and command asks you first, unless a rule or the mode allows it.</p>
    <ul>
      <li>Type a task below and press <kbd>Enter</kbd>. <kbd>@</kbd> mentions a file; the boxes above the input attach the selection or the file's problems; paste or drop a screenshot to send it along.</li>
      <li><kbd>Esc</kbd> stops a turn. A permission card answers to <kbd>1</kbd> <kbd>2</kbd> <kbd>3</kbd>…, <kbd>Esc</kbd> rejects.</li>
      <li>Paths in answers and tool cards open the file at the line.</li>
    </ul>
    <div id="welcome-key" hidden>
      <div class="welcome-actions">
        <button type="button" data-command="agentBridge.setApiKey" title="Store an Anthropic API key in VS Code's secret storage">Set API key</button>
        <button type="button" class="secondary" data-command="agentBridge.tryOffline" title="Run the bridge with its built-in offline model">Try it offline</button>
      </div>
      <p class="hint">No key yet? “Try it offline” runs a small built-in demo model (no network, no key, no cost): type <code>tour</code> to watch it do a whole task — a plan, reads, an edit you review, a command that asks.</p>
    </div>
    <div id="welcome-offline" hidden>
      <p class="hint">This is the offline demo model (no network, no key, no cost): type <code>tour</code> to watch it do a whole task — a plan, reads, an edit you review, a command that asks — or <code>help</code> for what else it does. For Claude on your own tasks:</p>
      <div class="welcome-actions"><button type="button" data-command="agentBridge.setApiKey" title="Store an Anthropic API key in VS Code's secret storage">Set API key</button></div>
    </div>
  </section>
  <main id="log" aria-live="polite"></main>
  <button id="jump" class="jump" hidden title="Scroll to the latest message">↓ Latest</button>
</div>
<section id="overlay" class="overlay" role="dialog" aria-modal="true" hidden></section>
<div id="toast" role="alert" hidden></div>
<section id="plan" hidden></section>
<footer id="composer">
  <div class="context-row">
    <label id="attach-label" hidden><input type="checkbox" id="attach"> Attach <span id="context-name"></span></label>
    <label id="problems-label" hidden title="Attach the diagnostics (errors, warnings) of the active file"><input type="checkbox" id="problems"> Problems <span id="problems-count"></span></label>
  </div>
  <ul id="mentions" role="listbox" hidden></ul>
  <div id="images" class="images" hidden></div>
  <textarea id="input" rows="3" placeholder="Ask the agent… (Enter to send, Shift+Enter for a new line, @ to mention a file, paste an image)"></textarea>
  <div class="buttons">
    <span id="meter" class="meter" hidden><span class="meter-bar"><span class="meter-fill"></span></span><span class="meter-text"></span><button id="compact" type="button" class="secondary" title="Summarize the conversation to free context (/compact)">Compact</button></span>
    <button id="stop" class="secondary" disabled title="Cancel the turn (Escape); press twice to force">Stop</button>
    <button id="send" title="Send (while a turn runs: interrupt it with this message)">Send</button>
  </div>
</footer>
<script nonce="${p.nonce}" src="${p.scriptUri}"></script>
</body>
</html>`;
}
