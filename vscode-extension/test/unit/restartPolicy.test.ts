/** Crash restarts: the policy, what the give-up message says, and that the README says the same (issue 24 item 5). */
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";
import { CrashCounter, givenUp, healthyMs, maxCrashes } from "../../src/restartPolicy";

describe("restarting a crashed bridge", () => {
  const delays = (): number[] => {
    const counter = new CrashCounter();
    const out: number[] = [];
    for (;;) {
      const { delayMs } = counter.record(0, 0);
      if (delayMs === undefined) return out;
      out.push(delayMs);
    }
  };

  it("restarts it maxCrashes times in a row, waiting longer each time, then gives up; a healthy minute starts the count again", () => {
    assert.deepEqual(delays(), [500, 1000, 2000, 4000]);
    assert.equal(delays().length, maxCrashes);
    const counter = new CrashCounter();
    for (let n = 0; n < maxCrashes; n++) counter.record(0, 0);
    assert.equal(counter.record(healthyMs + 10, 10).delayMs, 500);
  });

  it("the give-up message counts the stops and the restarts as they were", () => {
    assert.equal(givenUp(maxCrashes + 1), `It stopped ${maxCrashes + 1} times in a row (restarted ${maxCrashes} times); it is not restarted again: run “Agent Bridge: Restart” to try again.`);
  });

  it("the README says the same numbers", () => {
    const readme = fs.readFileSync(path.resolve(__dirname, "../../README.md"), "utf8");
    const said = (/\*\*Crash recovery\*\*[^\n]*(?:\n {2}[^\n]*)*/.exec(readme)?.[0] ?? "").replace(/\s+/g, " ");
    const seconds = delays().map((ms) => `${ms / 1000} s`);
    assert.ok(said.includes(`restarted up to ${maxCrashes} times in a row (after ${seconds.slice(0, -1).join(", ")} and ${seconds.at(-1) ?? ""}`), said);
    assert.ok(said.includes(`the ${["first", "second", "third", "fourth", "fifth", "sixth"][maxCrashes] ?? ""} stop in a row leaves it down`), said);
  });
});
