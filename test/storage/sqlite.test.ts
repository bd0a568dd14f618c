import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll } from "vitest";
import { SqliteStore } from "../../src/storage/sqlite.ts";
import { describeStoreConformance } from "./conformance.ts";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "setpoint-sqlite-"));
let n = 0;
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describeStoreConformance("sqlite", async () => SqliteStore.open(path.join(dir, `store-${n++}.db`)));
