/** The one wait of the TypeScript tests: resolves when `check` holds, polling; rejects naming `what` at the deadline. */
export async function poll(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 15000, everyMs = 20): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
