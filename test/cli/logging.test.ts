/**
 * How `up` and `controller-manager` log: the choice of format (text on a terminal,
 * JSON otherwise, or as --log-format says), and pino's records as readable lines.
 */
import { describe, expect, it } from "vitest";
import { formatRecord } from "../../src/cli/log-text.ts";
import { checkLogLevel, chooseLogFormat } from "../../src/cli/logging.ts";

/** A record as pino writes it, at 2026-12-04 16:31:22.188 local time. */
function record(fields: Record<string, unknown>): string {
  const time = new Date(2026, 11, 4, 16, 31, 22, 188).getTime();
  return `${JSON.stringify({ level: 30, time, pid: 1, hostname: "h", ...fields })}\n`;
}

describe("the log format", () => {
  it("is text on a terminal and JSON elsewhere, unless --log-format says", () => {
    expect(chooseLogFormat(undefined, true)).toBe("text");
    expect(chooseLogFormat(undefined, false)).toBe("json");
    expect(chooseLogFormat("json", true)).toBe("json");
    expect(chooseLogFormat("text", false)).toBe("text");
    expect(() => chooseLogFormat("pretty", true)).toThrow(/--log-format must be text or json/);
    expect(checkLogLevel("debug")).toBe("debug");
    expect(() => checkLogLevel("verbose")).toThrow(/--log-level must be one of/);
  });
});

describe("a record as a readable line", () => {
  it("shows time, level, component and message, then the other fields", () => {
    expect(
      formatRecord(
        record({
          component: "controller-manager",
          msg: "became leader",
          lease: "kube-system/setpoint-controller-manager",
          workers: 20,
          started: ["configmaps", "secrets"],
          note: "two words",
          empty: "",
        }),
      ),
    ).toBe(
      "16:31:22.188 INFO  controller-manager: became leader " +
        'lease=kube-system/setpoint-controller-manager workers=20 started=["configmaps","secrets"] ' +
        'note="two words" empty=""\n',
    );
  });

  it("puts an error's message last, and its stack below at level error", () => {
    const err = { type: "Error", message: "boom", stack: "Error: boom\n    at a (x.ts:1:1)" };
    expect(formatRecord(record({ level: 40, msg: "retrying", err }))).toBe(
      "16:31:22.188 WARN  retrying err=boom\n",
    );
    expect(formatRecord(record({ level: 50, msg: "request failed", path: "/api", err }))).toBe(
      "16:31:22.188 ERROR request failed path=/api err=boom\n    at a (x.ts:1:1)\n",
    );
  });

  it("colours the level only when asked, and keeps a line that is not JSON", () => {
    expect(formatRecord(record({ msg: "hi" }), true)).toBe(
      "\x1b[2m16:31:22.188\x1b[0m \x1b[32mINFO \x1b[0m hi\n",
    );
    expect(formatRecord("not json")).toBe("not json\n");
  });
});
