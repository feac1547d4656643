/** A long, varied agent answer of about `lines` lines: headings, paragraphs, nested lists, code, tables, quotes. */
export function longAnswer(lines: number): string {
  const out: string[] = [];
  let section = 0;
  while (out.length < lines) {
    section++;
    const n = section;
    out.push(`## Part ${n}: the \`module${n}.ts\` changes`, "");
    out.push(`Section ${n} explains what changed in **src/module${n}.ts** and why: the *parser* now keeps`, `its state between calls, so a streamed input is read once (see src/module${n}.ts:${n * 3}).`, "");
    out.push("1. Read the input", "   - split it into lines", "   - keep the last partial line", "2. Parse each complete line", "   1. tokens", "   2. blocks", "3. Render the new blocks only", "");
    out.push("- [x] tests for the parser", "- [ ] benchmark the renderer", "");
    out.push("```ts", `export function parse${n}(input: string): Block[] {`, "  const blocks: Block[] = [];", "  for (const line of input.split(\"\\n\")) {", "    if (!line.trim()) continue; // blank", `    blocks.push({ kind: "line", text: line, n: ${n} });`, "  }", "  return blocks;", "}", "```", "");
    out.push("| file | lines | change |", "|---|---:|---|", `| src/module${n}.ts | ${n * 7} | parser state |`, `| test/module${n}.test.ts | ${n * 3} | new cases |`, "");
    out.push(`> Note: the old code re-read the whole input for every chunk (${n} ms per call at 2,000 lines).`, "");
    out.push("```python", `def handler_${n}(event):`, '    """Handle one event."""', "    if event.kind == 'chunk':", "        return render(event.text)", "    return None", "```", "");
  }
  // Whole sections only: a cut could leave a code fence open, and the end marker inside it.
  return out.join("\n") + "\n\nEND-OF-STREAM\n";
}

/** The text cut into chunks of about `size` characters, as the bridge's ~16 ms coalescing sends them. */
export function chunks(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/** One code block of about `lines` lines (a whole file written out): its fence stays open while it streams. */
export function longFence(lines: number): string {
  const out = ["Here is the file:", "", "```ts"];
  for (let i = 0; out.length < lines; i++) out.push(`export function f${i}(x: number): string { return "v" + (x * ${i}).toString(); } // line ${i}`);
  return out.join("\n") + "\n```\n\nEND-OF-STREAM\n";
}

/** One table of about `lines` rows (a long listing the model writes out): one markdown block, parsed whole until it ends. */
export function longTable(lines: number): string {
  const out = ["Here is the listing:", "", "| file | lines | change |", "|---|---:|---|"];
  for (let i = 0; out.length < lines; i++) out.push(`| src/module${i}.ts | ${i * 7} | parser state, kept between calls (${i}) |`);
  return out.join("\n") + "\n\nEND-OF-STREAM\n";
}

/** One paragraph of about `lines` lines (no blank line inside): one markdown block, parsed whole until it ends. */
export function longParagraph(lines: number): string {
  const out = ["Here is the story:", ""];
  for (let i = 0; out.length < lines; i++) out.push(`Line ${i} of one long paragraph, with **bold** and \`code\` and src/module${i}.ts:${i} in it.`);
  return out.join("\n") + "\n\nEND-OF-STREAM\n";
}
