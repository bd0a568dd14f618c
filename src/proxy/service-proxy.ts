/**
 * The service proxy process's core (`setpoint service-proxy`, which the agent
 * starts and which outlives it, as kube-proxy is apart from the kubelet):
 * Services' cluster IPs and node ports served by the forwarder from the table
 * the agent keeps on disk (sync.ts writes it; store.ts reads it).
 *
 * It never asks the apiserver. It follows `services.json`: fs.watch on the data
 * directory (the file is replaced by a rename, so each change is a new file,
 * read again by its path) and a check every CHECK_MS of the file's identity
 * (inode, size, mtime) in case an event was missed. Each table read is swapped
 * in whole; one that cannot be read or parsed, or that would replace a table
 * with Services by one without any (emptiesTable, the agent's rule), changes
 * nothing: the last good table goes on being served.
 */
import { existsSync, type FSWatcher, statSync, watch } from "node:fs";
import type { RuntimeLogger } from "@setpoint/runtime";
import { Forwarder } from "./forwarder.ts";
import { loadServiceTable, SERVICE_TABLE_FILE } from "./store.ts";
import { emptiesTable, type ServiceTable, sameServices } from "./table.ts";

/** How often the table file is checked for a change that fs.watch did not report, ms. */
export const CHECK_MS = 1_000;

export interface ServiceProxyOptions {
  /** Where the agent keeps services.json. */
  dataDir: string;
  /** The node's address, where node ports listen. */
  nodeAddress: string;
  logger: RuntimeLogger;
  ejectMs?: number | undefined;
  connectTimeoutMs?: number | undefined;
  /** Called once the data directory is gone (the node's state was removed). */
  onDataDirGone?: (() => void) | undefined;
}

export class ServiceProxy {
  readonly forwarder: Forwarder;
  private current: ServiceTable | undefined;
  /** The identity of the file last read ("ino:size:mtime"). */
  private seen = "";
  private lastError = "";
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly opts: ServiceProxyOptions) {
    this.forwarder = new Forwarder({
      nodeAddress: opts.nodeAddress,
      logger: opts.logger,
      ejectMs: opts.ejectMs,
      connectTimeoutMs: opts.connectTimeoutMs,
    });
  }

  /** The table served now (undefined before the first one). */
  get table(): ServiceTable | undefined {
    return this.current;
  }

  /** Serves the table on disk (if any) and follows the file. */
  start(): void {
    this.check();
    try {
      this.watcher = watch(this.opts.dataDir, (_event, name) => {
        if (name === null || name === SERVICE_TABLE_FILE) this.check();
      });
      this.watcher.on("error", () => {
        // The directory went away; the periodic check notices.
      });
    } catch (err) {
      this.opts.logger.warn(
        { err: (err as Error).message, checkMs: CHECK_MS },
        "cannot watch the data directory; checking the table periodically",
      );
    }
    this.timer = setInterval(() => this.check(), CHECK_MS);
  }

  /** Reads the table again when the file changed since it was last read. */
  private check(): void {
    if (this.stopped) return;
    const file = `${this.opts.dataDir}/${SERVICE_TABLE_FILE}`;
    let id: string;
    try {
      const st = statSync(file);
      id = `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch (err) {
      if (!existsSync(this.opts.dataDir)) {
        this.opts.logger.warn({ dataDir: this.opts.dataDir }, "the data directory is gone");
        this.opts.onDataDirGone?.();
      }
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") this.failed(err);
      return;
    }
    if (id === this.seen) return;
    let table: ServiceTable | undefined;
    try {
      table = loadServiceTable(this.opts.dataDir);
    } catch (err) {
      // Marked seen: a bad file is reported once, and a rewrite has a new identity.
      this.seen = id;
      this.failed(err);
      return;
    }
    this.seen = id;
    this.lastError = "";
    if (!table || sameServices(this.current, table)) return;
    if (emptiesTable(this.current, table.services.length)) {
      this.opts.logger.warn(
        { services: this.current?.services.length },
        "the table on disk has no Service at all; keeping the table served",
      );
      return;
    }
    const first = this.current === undefined;
    this.current = table;
    this.forwarder.apply(table);
    this.opts.logger.info(
      {
        services: table.services.length,
        ageSeconds: Math.round((Date.now() - Date.parse(table.syncedAt)) / 1000),
      },
      first ? "service proxy serving the table saved on disk" : "service table updated",
    );
  }

  private failed(err: unknown): void {
    const message = (err as Error).message;
    if (message === this.lastError) return;
    this.lastError = message;
    this.opts.logger.error(
      { err: message },
      "the service table on disk is unreadable; keeping the table served",
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.watcher?.close();
    clearInterval(this.timer);
    await this.forwarder.close();
  }
}
