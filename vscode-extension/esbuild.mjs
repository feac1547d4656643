// Bundles the extension (node, CommonJS, `vscode` external) and the webview script (browser, IIFE).
import * as esbuild from "esbuild";
import process from "node:process";

const watch = process.argv.includes("--watch");
const common = { bundle: true, sourcemap: true, minify: !watch, logLevel: "info" };
const builds = [
  { ...common, entryPoints: ["src/extension.ts"], outfile: "out/extension.js", platform: "node", format: "cjs", target: "node18", external: ["vscode"] },
  { ...common, entryPoints: ["webview/main.ts"], outfile: "out/webview.js", platform: "browser", format: "iife", target: "es2022" },
];

if (watch) {
  for (const b of builds) await (await esbuild.context(b)).watch();
} else {
  await Promise.all(builds.map((b) => esbuild.build(b)));
}
