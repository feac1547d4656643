// One command for every platform's .vsix: out/agent-bridge-<target>.vsix for linux-x64, linux-arm64, darwin-arm64,
// darwin-x64 and win32-x64, each carrying that platform's wheels (scripts/bundle-bridge.mjs), then a copy of this
// machine's as out/agent-bridge.vsix (what the end-to-end run installs). The bridge's own wheel is built once;
// the dependency wheels come from one pip cache (bundle-bridge.mjs keeps them per target and pyproject hash).
// Then scripts/check_vsix.py checks each .vsix's wheels by tag for CPython 3.11–3.14.
//
// Env: TARGETS (comma-separated; default all five), BRIDGE_PYTHON (as bundle-bridge.mjs), NO_CHECK=1 skips the check.
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import process from "node:process";

const ext = path.resolve(import.meta.dirname, "..");
const repo = path.resolve(ext, "..");
const all = ["linux-x64", "linux-arm64", "darwin-arm64", "darwin-x64", "win32-x64"];
const targets = (process.env.TARGETS || all.join(",")).split(",").map((t) => t.trim()).filter(Boolean);
const here = `${process.platform}-${process.arch}`;
const python =
  process.env.BRIDGE_PYTHON ||
  [process.env.VENV && path.join(process.env.VENV, "bin/python"), path.join(repo, ".venv/bin/python")].find((p) => p && fs.existsSync(p)) ||
  "python3";
const log = (msg) => console.log(`[package-all] ${msg}`);

function run(command, args, env = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ext, stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, ...env } });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.on("error", reject);
    child.on("exit", (code) => (code === 0 ? resolve(output) : reject(new Error(`${command} ${args.join(" ")} failed (${code}):\n${output}`))));
  });
}

const started = Date.now();
for (const t of targets) if (!all.includes(t)) throw new Error(`package-all: unknown target ${t} (known: ${all.join(", ")})`);
const build = fs.mkdtempSync(path.join(os.tmpdir(), "ab-wheel-"));
try {
  log(`building agent-bridge's wheel once, with ${python}`);
  await run(python, ["-m", "pip", "--disable-pip-version-check", "wheel", "--quiet", "--no-deps", "-w", build, repo]);
  const wheel = fs.readdirSync(build).find((f) => /^agent_bridge-.*\.whl$/.test(f));
  if (!wheel) throw new Error("package-all: pip wheel made no agent_bridge wheel");
  fs.mkdirSync(path.join(ext, "out"), { recursive: true });
  const made = [];
  for (const target of targets) {
    const t0 = Date.now();
    const out = path.join("out", `agent-bridge-${target}.vsix`);
    await run("npx", ["vsce", "package", "--no-dependencies", "--target", target, "-o", out], {
      VSCE_TARGET: target,
      BRIDGE_PYTHON: python,
      BRIDGE_WHEEL: path.join(build, wheel),
    });
    const size = fs.statSync(path.join(ext, out)).size;
    log(`${target}: ${out} (${(size / 1e6).toFixed(1)} MB) in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    made.push(path.join(ext, out));
  }
  const mine = here === "linux-x64" || here === "linux-arm64" || here.startsWith("darwin-") || here === "win32-x64" ? here : null;
  if (mine && targets.includes(mine)) fs.copyFileSync(path.join(ext, "out", `agent-bridge-${mine}.vsix`), path.join(ext, "out", "agent-bridge.vsix"));
  if (process.env.NO_CHECK !== "1") {
    log("checking each .vsix's wheels by tag");
    process.stdout.write(await run(python, [path.join(repo, "scripts", "check_vsix.py"), ...made]));
  }
  log(`${made.length} .vsix in ${((Date.now() - started) / 1000).toFixed(1)} s`);
} finally {
  fs.rmSync(build, { recursive: true, force: true });
}
