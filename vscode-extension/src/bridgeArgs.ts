/**
 * How the bundled bridge is started: `<venv python> -P -m bridge.cli.main serve`, in the workspace folder.
 *
 * `-P` (Python 3.11+; the bridge needs 3.11) keeps the working directory off `sys.path`. Without it, `-m` puts the
 * workspace first, so a cloned repository's own `json.py`, `typing.py` or `enum.py` would be imported by the
 * bridge in place of the standard library's: code run from the folder before anyone was asked to trust it.
 */
export function bundledArgs(): string[] {
  return ["-P", "-m", "bridge.cli.main", "serve"];
}
