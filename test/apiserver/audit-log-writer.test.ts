/**
 * The audit log writer on its own: lumberjack's rotation (a line never splits
 * across files, backups named by the UTC time of rotation, old ones removed by count
 * and by the age in their names, other files left alone), and failures that are
 * logged, never thrown at the writer's caller.
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { AuditLogWriter } from "../../src/apiserver/audit/index.ts";

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), "setpoint-audit-writer-"));
  dirs.push(d);
  return d;
}

/** A logger whose records land in `records`. */
function capture(records: { level: number; msg: string }[]) {
  return pino(
    { level: "trace" },
    {
      write(line: string) {
        records.push(JSON.parse(line));
      },
    },
  );
}

const line = (i: number) => JSON.stringify({ kind: "Event", n: i, pad: "x".repeat(80) });

describe("AuditLogWriter", () => {
  it("rotates before a line would pass the size, and keeps every line whole", async () => {
    const dir = await tempDir();
    const path = join(dir, "audit.log");
    const w = new AuditLogWriter({ path, maxSizeBytes: 1000 });
    await w.open();
    for (let i = 0; i < 50; i++) w.write(line(i));
    await w.close();
    const names = (await readdir(dir)).sort();
    expect(names.length).toBeGreaterThan(4);
    expect(names.at(-1)).toBe("audit.log");
    const all: number[] = [];
    for (const name of names) {
      const text = await readFile(join(dir, name), "utf8");
      expect(Buffer.byteLength(text)).toBeLessThanOrEqual(1000);
      // Each file holds as many lines as fit: one more would have passed the size.
      if (name !== "audit.log")
        expect(Buffer.byteLength(text) + line(0).length + 1).toBeGreaterThan(1000);
      for (const l of text.split("\n").filter(Boolean)) all.push(JSON.parse(l).n);
    }
    // Backups sort by time, oldest first, then the live log: every line once, in order.
    expect(all).toEqual([...Array(50).keys()]);
  });

  it("removes backups beyond maxBackups and older than maxAgeDays, and leaves other files", async () => {
    const dir = await tempDir();
    const path = join(dir, "audit.log");
    await writeFile(join(dir, "audit-2020-01-01T00-00-00.000.log"), "old\n");
    await writeFile(join(dir, "audit-notatime.log"), "keep\n");
    await writeFile(join(dir, "other.log"), "keep\n");
    const w = new AuditLogWriter({ path, maxSizeBytes: 300, maxAgeDays: 1 });
    await w.open();
    for (let i = 0; i < 6; i++) w.write(line(i));
    await w.flush();
    let names = (await readdir(dir)).sort();
    expect(names).not.toContain("audit-2020-01-01T00-00-00.000.log");
    expect(names).toContain("audit-notatime.log");
    expect(names).toContain("other.log");
    await w.close();

    const counted = new AuditLogWriter({ path, maxSizeBytes: 300, maxBackups: 1 });
    await counted.open();
    for (let i = 0; i < 8; i++) counted.write(line(i));
    await counted.close();
    names = (await readdir(dir)).filter((n) => /^audit-\d{4}-/.test(n));
    expect(names).toHaveLength(1);
  });

  it("logs a failed write and goes on, never throwing at the caller", async () => {
    const dir = await tempDir();
    const path = join(dir, "sub", "audit.log");
    const records: { level: number; msg: string }[] = [];
    const w = new AuditLogWriter({ path, maxSizeBytes: 300, logger: capture(records) });
    await w.open();
    // The directory goes away: the rotation's rename fails, and so does reopening.
    await rm(join(dir, "sub"), { recursive: true, force: true });
    expect(() => {
      for (let i = 0; i < 6; i++) w.write(line(i));
    }).not.toThrow();
    await expect(w.flush()).resolves.toBeUndefined();
    expect(records.some((r) => r.msg === "writing the audit log failed")).toBe(true);
    await expect(w.close()).resolves.toBeUndefined();
  });

  it("drops a line larger than the file may be, as lumberjack refuses it", async () => {
    const dir = await tempDir();
    const path = join(dir, "audit.log");
    const records: { level: number; msg: string }[] = [];
    const w = new AuditLogWriter({ path, maxSizeBytes: 100, logger: capture(records) });
    await w.open();
    w.write("x".repeat(200));
    w.write('{"small":1}');
    await w.close();
    expect(await readFile(path, "utf8")).toBe('{"small":1}\n');
    expect(records.some((r) => r.msg.includes("larger than --audit-log-maxsize"))).toBe(true);
  });
});
