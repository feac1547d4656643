/**
 * The bridge the .vsix carries (bridge/manifest.json + bridge/wheels/, made by scripts/bundle-bridge.mjs),
 * installed into a private venv in the extension's global storage on first use. Nothing here imports
 * `vscode`: the finding of candidates (settings, the Python extension) and the progress UI are the caller's.
 *
 * The venv's folder is keyed by the bundled wheel's version and hash, so an updated extension installs its
 * own bridge beside the old one and removes the old one after. An install is made in a temporary folder and
 * renamed into place when complete: a window that dies half-way leaves nothing that looks installed, and two
 * windows installing at once both end up using the same folder.
 */
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

export const minimumPython: readonly [number, number] = [3, 11];

export interface BridgeManifest {
  version: string;
  wheel: string;
  sha256: string;
  pip: string;
  target?: string;
}

export interface PythonCandidate {
  command: string;
  /** Where it came from, for messages: "agentBridge.pythonPath", "the Python extension", "PATH". */
  source: string;
}

export interface FoundPython {
  executable: string;
  version: string;
  source: string;
}

export interface InstalledBridge {
  /** The venv's Python: the bridge runs as `<python> -P -m bridge.cli.main serve` (bridgeArgs.ts). */
  python: string;
  dir: string;
  /** True when this call installed it (first start, or a new version). */
  installed: boolean;
}

export interface Logger {
  info(message: string): void;
  warn(message: string): void;
}

/** No Python ≥ 3.11 among the candidates; `tried` says what each one was. */
export class NoSuitablePython extends Error {
  constructor(readonly tried: { candidate: PythonCandidate; found: string }[]) {
    const lines = tried.map((t) => `${t.candidate.command} (${t.candidate.source}): ${t.found}`);
    super(`No Python ${minimumPython.join(".")} or newer was found. Tried: ${lines.join("; ") || "nothing"}`);
  }
}

export class InstallError extends Error {}

export function readManifest(extensionPath: string): BridgeManifest | undefined {
  try {
    const raw = JSON.parse(fs.readFileSync(path.join(extensionPath, "bridge", "manifest.json"), "utf8")) as Partial<BridgeManifest>;
    if (typeof raw.version === "string" && typeof raw.wheel === "string" && typeof raw.sha256 === "string" && typeof raw.pip === "string") {
      return { version: raw.version, wheel: raw.wheel, sha256: raw.sha256, pip: raw.pip, target: raw.target };
    }
  } catch {
    // no manifest: a development build without the bundled bridge
  }
  return undefined;
}

/** The PATH candidates, after any the caller puts first (the setting, the Python extension's interpreter). */
export function pathCandidates(): PythonCandidate[] {
  const names = process.platform === "win32" ? ["python", "py"] : ["python3", "python3.14", "python3.13", "python3.12", "python3.11", "python"];
  return names.map((command) => ({ command, source: "PATH" }));
}

const probe = "import sys; print('%d.%d' % sys.version_info[:2]); print(sys.executable)";

/** The first candidate that runs and is new enough (each is asked for its version and real executable). */
export async function findPython(candidates: PythonCandidate[]): Promise<FoundPython> {
  const tried: { candidate: PythonCandidate; found: string }[] = [];
  const seen = new Set<string>();
  for (const candidate of candidates) {
    if (!candidate.command || seen.has(candidate.command)) continue;
    seen.add(candidate.command);
    let output: string;
    try {
      output = await run(candidate.command, ["-c", probe], { timeoutMs: 15000 });
    } catch (err) {
      tried.push({ candidate, found: (err as NodeJS.ErrnoException).code === "ENOENT" ? "not found" : firstLine(String(err)) });
      continue;
    }
    const [version = "", executable = ""] = output.trim().split(/\r?\n/);
    const [major, minor] = version.split(".").map(Number);
    if (major === undefined || minor === undefined || Number.isNaN(major) || Number.isNaN(minor)) {
      tried.push({ candidate, found: `not a Python (${firstLine(output)})` });
    } else if (major < minimumPython[0] || (major === minimumPython[0] && minor < minimumPython[1])) {
      tried.push({ candidate, found: `Python ${version}, too old` });
    } else {
      return { executable: executable.trim() || candidate.command, version, source: candidate.source };
    }
  }
  throw new NoSuitablePython(tried);
}

export function venvPython(dir: string): string {
  return process.platform === "win32" ? path.join(dir, "Scripts", "python.exe") : path.join(dir, "bin", "python");
}

/**
 * The installed bridge for `manifest`, installing it first when needed. `python` is asked only when an install
 * is needed. `report` gets progress lines (for a notification); pip's output goes to `log`.
 */
export async function ensureBridge(opts: {
  extensionPath: string;
  storagePath: string;
  manifest: BridgeManifest;
  python: () => Promise<FoundPython>;
  log: Logger;
  report?: (message: string) => void;
}): Promise<InstalledBridge> {
  const { manifest, log } = opts;
  const root = path.join(opts.storagePath, "bridge");
  const key = `${manifest.version}-${manifest.sha256.slice(0, 12)}`;
  const dir = path.join(root, key);
  if (isInstalled(dir)) return { python: venvPython(dir), dir, installed: false };

  const found = await opts.python();
  log.info(`Installing the bridge ${manifest.version} into ${dir} with Python ${found.version} (${found.executable}, from ${found.source})`);
  fs.mkdirSync(root, { recursive: true });
  const tmp = path.join(root, `.tmp-${key}-${process.pid}-${Date.now()}`);
  const wheels = path.join(opts.extensionPath, "bridge", "wheels");
  try {
    opts.report?.(`creating a Python ${found.version} environment`);
    await run(found.executable, ["-m", "venv", "--without-pip", tmp], { timeoutMs: 120000 });
    // pip runs from its bundled wheel (a venv without pip needs no ensurepip, which some distributions split off).
    const pip = [path.join(wheels, manifest.pip, "pip"), "install", "--disable-pip-version-check", "--no-warn-script-location", "--quiet", "--no-compile"];
    const requirement = `agent-bridge==${manifest.version}`;
    opts.report?.("installing the bridge and its dependencies (no network needed)");
    try {
      // The bundled wheels only, whatever the user's pip configuration says.
      await run(venvPython(tmp), [...pip, "--no-index", "--find-links", wheels, requirement], { timeoutMs: 600000, env: { PIP_CONFIG_FILE: os.devNull } });
    } catch (err) {
      // A Python the bundle has no native wheels for (or another platform): the index supplies what is missing.
      log.warn(`Installing from the bundled wheels failed (${firstLine(String(err))}); trying the package index`);
      opts.report?.("installing from the package index");
      await run(venvPython(tmp), [...pip, "--find-links", wheels, requirement], { timeoutMs: 600000 });
    }
    const stamp = { version: manifest.version, sha256: manifest.sha256, python: found.executable, pythonVersion: found.version, at: new Date().toISOString() };
    fs.writeFileSync(path.join(tmp, "agent-bridge-install.json"), JSON.stringify(stamp, null, 2));
    try {
      fs.renameSync(tmp, dir);
    } catch (err) {
      if (!isInstalled(dir)) throw err;
      fs.rmSync(tmp, { recursive: true, force: true }); // another window finished first: use its install
    }
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw new InstallError(`Installing the bridge with Python ${found.version} (${found.executable}) failed: ${String(err instanceof Error ? err.message : err)}`);
  }
  removeOthers(root, key, log);
  log.info(`Installed the bridge ${manifest.version}`);
  return { python: venvPython(dir), dir, installed: true };
}

function isInstalled(dir: string): boolean {
  // The venv's python is a link to the base interpreter: a removed base Python means a reinstall.
  return fs.existsSync(path.join(dir, "agent-bridge-install.json")) && fs.existsSync(venvPython(dir));
}

/** Older versions' folders, and temporary folders of installs that died more than an hour ago. */
function removeOthers(root: string, keep: string, log: Logger): void {
  for (const name of fs.readdirSync(root)) {
    if (name === keep) continue;
    const full = path.join(root, name);
    try {
      if (name.startsWith(".tmp-") && Date.now() - fs.statSync(full).mtimeMs < 3600_000) continue;
      fs.rmSync(full, { recursive: true, force: true });
      log.info(`Removed the old bridge install ${name}`);
    } catch {
      // in use on a system that locks files, or already gone: next time
    }
  }
}

function run(command: string, args: string[], opts: { timeoutMs: number; env?: Record<string, string> }): Promise<string> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, PYTHONNOUSERSITE: "1", ...opts.env };
    execFile(command, args, { timeout: opts.timeoutMs, env, maxBuffer: 16 * 1024 * 1024, windowsHide: true }, (err, stdout, stderr) => {
      if (err) {
        const detail = (stderr || stdout).trim().split(/\r?\n/).filter((l) => !/is ignored/.test(l)).slice(-8).join("\n");
        const wrapped = Object.assign(new Error(detail ? `${err.message.split("\n")[0]}\n${detail}` : err.message), { code: (err as NodeJS.ErrnoException).code });
        reject(wrapped);
      } else {
        resolve(stdout);
      }
    });
  });
}

function firstLine(text: string): string {
  return text.split("\n").find((l) => l.trim())?.trim() ?? text;
}
