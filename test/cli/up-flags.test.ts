/** `setpoint up`'s storage flags, as the control plane's storage options. */
import { describe, expect, it } from "vitest";
import { parseStorage } from "../../src/cli/up.ts";
import { UsageError } from "../../src/cli/usage-error.ts";

describe("parseStorage", () => {
  it("takes SQLite by default and etcd with its endpoints, prefix and compaction interval", () => {
    expect(parseStorage({ storage: "sqlite", "etcd-prefix": "/setpoint/" })).toEqual({
      backend: "sqlite",
    });
    expect(
      parseStorage({
        storage: "etcd",
        "etcd-endpoints": "http://127.0.0.1:2379, http://127.0.0.2:2379",
        "etcd-prefix": "/x/",
        "etcd-compaction-interval": "90s",
      }),
    ).toEqual({
      backend: "etcd",
      endpoints: ["http://127.0.0.1:2379", "http://127.0.0.2:2379"],
      prefix: "/x/",
      compactionIntervalMs: 90_000,
    });
    expect(
      parseStorage({
        storage: "etcd",
        "etcd-endpoints": "http://127.0.0.1:2379",
        "etcd-prefix": "/setpoint/",
        "etcd-compaction-interval": "0",
      }),
    ).toMatchObject({ compactionIntervalMs: 0 });
  });

  it("refuses etcd without endpoints and an unknown backend", () => {
    expect(() => parseStorage({ storage: "etcd", "etcd-prefix": "/setpoint/" })).toThrow(
      UsageError,
    );
    expect(() => parseStorage({ storage: "redis", "etcd-prefix": "/setpoint/" })).toThrow(
      /unknown --storage "redis"/,
    );
  });
});
