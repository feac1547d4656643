// Puts the bridge into the extension: bridge/wheels/ gets agent-bridge's wheel (built from the repository's
// pyproject), every dependency wheel for CPython 3.11–3.14 on the target platform, and pip's own wheel; then
// bridge/manifest.json names the bridge wheel and its sha256. On first activation the extension makes a
// private venv from these files with no network (src/bridgeInstall.ts).
//
// Why bundle the dependencies: an install that needs no index works behind proxies and offline. The price is a
// platform-specific .vsix (pydantic-core, jiter and ripgrep are native): `vsce package --target <target>`.
// Env: VSCE_TARGET (default linux-x64), BRIDGE_PYTHON (the Python that runs pip; default: $VENV or the
// repository's .venv, else python3), BRIDGE_WHEEL (an agent_bridge wheel already built: scripts/package-all.mjs
// builds it once for the five targets). Dependency downloads are cached by the hash of pyproject.toml.
// Every CPython of `pythons` must get a complete wheel set for the target, or the bundle fails;
// scripts/check_vsix.py then proves it from the .vsix itself, by tag.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import process from "node:process";

const ext = path.resolve(import.meta.dirname, "..");
const repo = path.resolve(ext, "..");
const out = path.join(ext, "bridge");
const wheels = path.join(out, "wheels");
const pythons = ["3.11", "3.12", "3.13", "3.14"];
const platformTags = {
  "linux-x64": ["manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64", "linux_x86_64"],
  "linux-arm64": ["manylinux2014_aarch64", "manylinux_2_17_aarch64", "manylinux_2_28_aarch64", "linux_aarch64"],
  "darwin-arm64": ["macosx_11_0_arm64", "macosx_12_0_arm64", "macosx_14_0_arm64"],
  "darwin-x64": ["macosx_10_12_x86_64", "macosx_10_15_x86_64", "macosx_11_0_x86_64"],
  "win32-x64": ["win_amd64"],
};
// pip evaluates environment markers (`sys_platform == 'win32'`) for the machine it runs on, whatever --platform
// says: without these, a Windows bundle built on Linux lacks mcp's pywin32 and click's colorama.
const platformMarkers = {
  "linux-x64": { sys_platform: "linux", platform_system: "Linux", os_name: "posix", platform_machine: "x86_64" },
  "linux-arm64": { sys_platform: "linux", platform_system: "Linux", os_name: "posix", platform_machine: "aarch64" },
  "darwin-arm64": { sys_platform: "darwin", platform_system: "Darwin", os_name: "posix", platform_machine: "arm64" },
  "darwin-x64": { sys_platform: "darwin", platform_system: "Darwin", os_name: "posix", platform_machine: "x86_64" },
  "win32-x64": { sys_platform: "win32", platform_system: "Windows", os_name: "nt", platform_machine: "AMD64" },
};
const markersFor = (version) => ({
  ...platformMarkers[target], python_version: version, python_full_version: `${version}.0`,
  implementation_name: "cpython", platform_python_implementation: "CPython",
});
// pip with the target's markers in place of this machine's (pip has no option for it).
const PIP_FOR_TARGET = [
  "import json, os, sys",
  "import pip._vendor.packaging.markers as markers",
  "target = json.loads(os.environ['BUNDLE_MARKERS'])",
  "default = markers.default_environment",
  "markers.default_environment = lambda: {**default(), **target}",
  "from pip._internal.cli.main import main",
  "sys.exit(main(sys.argv[1:]))",
].join("\n");
const target = process.env.VSCE_TARGET || "linux-x64";
const tags = platformTags[target];
if (!tags) throw new Error(`bundle-bridge: no platform tags for target ${target} (known: ${Object.keys(platformTags).join(", ")})`);

const python =
  process.env.BRIDGE_PYTHON ||
  [process.env.VENV && path.join(process.env.VENV, "bin/python"), path.join(repo, ".venv/bin/python")].find((p) => p && fs.existsSync(p)) ||
  "python3";
const log = (msg) => console.log(`[bundle-bridge] ${msg}`);

/** Runs pip quietly (with `markers`: the target's environment markers); its "Location ... is ignored" chatter from
 * the machine's mirror config is dropped. */
function pip(args, markers) {
  return new Promise((resolve, reject) => {
    const command = markers ? ["-c", PIP_FOR_TARGET] : ["-m", "pip"];
    const env = markers ? { ...process.env, BUNDLE_MARKERS: JSON.stringify(markers) } : process.env;
    const child = spawn(python, [...command, "--disable-pip-version-check", ...args], { stdio: ["ignore", "pipe", "pipe"], env });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    child.on("error", reject);
    child.on("exit", (code) => {
      if (code === 0) resolve(output);
      else reject(new Error(`pip ${args.join(" ")} failed (${code}):\n${output.split("\n").filter((l) => !/is ignored/.test(l)).join("\n")}`));
    });
  });
}

const sha256 = (file) => createHash("sha256").update(fs.readFileSync(file)).digest("hex");

fs.rmSync(out, { recursive: true, force: true });
fs.mkdirSync(wheels, { recursive: true });

let built;
if (process.env.BRIDGE_WHEEL) {
  built = path.basename(process.env.BRIDGE_WHEEL);
  if (!/^agent_bridge-.*\.whl$/.test(built)) throw new Error(`bundle-bridge: BRIDGE_WHEEL is not an agent_bridge wheel: ${built}`);
  log(`agent-bridge's wheel: ${process.env.BRIDGE_WHEEL}`);
  fs.copyFileSync(process.env.BRIDGE_WHEEL, path.join(wheels, built));
} else {
  log(`building agent-bridge's wheel from ${repo} with ${python}`);
  const build = fs.mkdtempSync(path.join(os.tmpdir(), "ab-wheel-"));
  await pip(["wheel", "--quiet", "--no-deps", "-w", build, repo]);
  built = fs.readdirSync(build).find((f) => /^agent_bridge-.*\.whl$/.test(f));
  if (!built) throw new Error("bundle-bridge: pip wheel made no agent_bridge wheel");
  fs.copyFileSync(path.join(build, built), path.join(wheels, built));
  fs.rmSync(build, { recursive: true, force: true });
}
const version = built.split("-")[1];

// The dependency closure changes only with pyproject.toml: cache it (per target) outside node_modules.
const pyproject = fs.readFileSync(path.join(repo, "pyproject.toml"));
const key = createHash("sha256").update(pyproject).update(target).update(pythons.join()).update("target-markers").digest("hex").slice(0, 16);
const cacheRoot = path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "agent-bridge-vsix");
const cache = path.join(cacheRoot, key);
if (!fs.existsSync(path.join(cache, ".complete"))) {
  log(`downloading the dependency wheels for ${target}, CPython ${pythons.join(", ")} (cached in ${cache})`);
  const partial = `${cache}.partial-${process.pid}`;
  fs.rmSync(partial, { recursive: true, force: true });
  fs.mkdirSync(partial, { recursive: true });
  const platformArgs = tags.flatMap((t) => ["--platform", t]);
  const results = await Promise.allSettled(
    pythons.map((v) =>
      pip(["download", "--quiet", "--only-binary=:all:", ...platformArgs, "--python-version", v, "--implementation", "cp", "-d", partial, path.join(wheels, built), "pip"], markersFor(v)),
    ),
  );
  results.forEach((r, i) => {
    // every supported Python must be covered: the extension installs with no index
    if (r.status === "rejected") throw new Error(`bundle-bridge: no complete wheel set for CPython ${pythons[i]} on ${target}: ${r.reason}`);
  });
  for (const f of fs.readdirSync(partial)) if (/^agent_bridge-/.test(f)) fs.rmSync(path.join(partial, f));
  fs.writeFileSync(path.join(partial, ".complete"), "");
  fs.rmSync(cache, { recursive: true, force: true });
  fs.mkdirSync(cacheRoot, { recursive: true });
  fs.renameSync(partial, cache);
} else {
  log(`dependency wheels from the cache (${cache})`);
}
for (const f of fs.readdirSync(cache)) if (f.endsWith(".whl")) fs.copyFileSync(path.join(cache, f), path.join(wheels, f));

const pipWheel = fs.readdirSync(wheels).find((f) => /^pip-.*\.whl$/.test(f));
if (!pipWheel) throw new Error("bundle-bridge: no pip wheel");
const manifest = { version, wheel: built, sha256: sha256(path.join(wheels, built)), pip: pipWheel, target, pythons, platformTags: tags };
fs.writeFileSync(path.join(out, "manifest.json"), JSON.stringify(manifest, null, 2) + "\n");
const size = fs.readdirSync(wheels).reduce((n, f) => n + fs.statSync(path.join(wheels, f)).size, 0);
log(`bridge ${version} (${manifest.sha256.slice(0, 12)}), ${fs.readdirSync(wheels).length} wheels, ${(size / 1e6).toFixed(1)} MB`);
// `npx vsce package` runs this too, and vsce alone cannot know the wheels are one platform's.
if (!process.env.VSCE_TARGET) log(`these wheels are ${target}'s: package with \`vsce package --target ${target}\` (npm run package does), or the .vsix claims every platform`);
