import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { renderMarkdown } from "../../src/panel/markdown";
import { lineDiff } from "../../webview/diff";

describe("safe markdown", () => {
  it("escapes every tag and attribute in the source", () => {
    const html = renderMarkdown('<script>alert(1)</script> <img src=x onerror="alert(1)"> **b**');
    assert.ok(!html.includes("<script"));
    assert.ok(!html.includes("<img"));
    assert.ok(html.includes("&lt;script&gt;"));
    assert.ok(html.includes("<strong>b</strong>"));
  });

  it("keeps only http(s)/mailto links, with the URL escaped", () => {
    assert.equal(renderMarkdown("[x](javascript:void)"), "<p>x</p>");
    assert.equal(renderMarkdown('[x](https://a.b/"q)'), '<p><a href="https://a.b/&quot;q">x</a></p>');
  });

  it("code spans and fences are literal; an unterminated fence (still streaming) renders as code", () => {
    assert.equal(renderMarkdown("`**a** <b>`"), "<p><code>**a** &lt;b&gt;</code></p>");
    assert.equal(renderMarkdown("```py\nx = '<a>'\n"), '<pre><code class="language-py">x = &#39;&lt;a&gt;&#39;\n</code></pre>');
  });

  it("headings, lists, quotes and paragraphs", () => {
    assert.equal(renderMarkdown("# T\n- a\n- *b*\n\n1. one\n> q"), "<h1>T</h1><ul><li>a</li><li><em>b</em></li></ul><ol><li>one</li></ol><blockquote><p>q</p></blockquote>");
    assert.equal(renderMarkdown("a\nb\n\nc"), "<p>a<br>b</p><p>c</p>");
  });

  it("a forged placeholder in the text cannot inject held HTML", () => {
    assert.ok(!renderMarkdown("\uE0000\uE001 `x`").includes("<code>x</code><code>"));
  });
});

describe("tool-card line diff", () => {
  it("keeps the common head and tail as context, the middle as removed then added", () => {
    assert.deepEqual(lineDiff("a\nb\nc", "a\nB\nc"), [
      { op: "same", text: "a" },
      { op: "del", text: "b" },
      { op: "add", text: "B" },
      { op: "same", text: "c" },
    ]);
    assert.deepEqual(lineDiff("", "new"), [{ op: "add", text: "new" }]);
  });
});
