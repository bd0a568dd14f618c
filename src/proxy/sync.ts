/**
 * The agent's half of the service proxy: the service table built from Services
 * and EndpointSlices, followed through informers, and saved on disk, where the
 * service proxy process (process.ts) reads it. The agent's Pods get their
 * Service environment variables from the same table.
 *
 * Start order makes it statically stable: the table saved on disk is loaded
 * before anything asks the apiserver; the informers then start in the
 * background, and a table is built from the API only once both have listed (a
 * partial cache never replaces a good table). Each new table is saved
 * atomically. Losing the apiserver changes nothing: the informers retry, the
 * table stays.
 */
import type { EndpointSlice, Service } from "@setpoint/api";
import { type Client, Informer, kind, type RuntimeLogger } from "@setpoint/runtime";
import { loadServiceTable, saveServiceTable } from "./store.ts";
import { buildServiceTable, type ServiceTable, sameServices } from "./table.ts";

const SERVICE = kind<Service>("v1", "Service");
const SLICE = kind<EndpointSlice>("discovery.k8s.io/v1", "EndpointSlice");

/** Wait after a change before rebuilding, ms. */
export const DEFAULT_DEBOUNCE_MS = 20;

export interface ServiceTableSyncOptions {
  client: Client;
  /** Where services.json is kept. */
  dataDir: string;
  logger: RuntimeLogger;
  debounceMs?: number | undefined;
}

export class ServiceTableSync {
  private current: ServiceTable | undefined;
  private services: Informer<Service> | undefined;
  private slices: Informer<EndpointSlice> | undefined;
  private readonly abort = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private readonly listeners = new Set<(t: ServiceTable) => void>();

  constructor(private readonly opts: ServiceTableSyncOptions) {}

  /** The table now (undefined before the first one). */
  get table(): ServiceTable | undefined {
    return this.current;
  }

  /** Calls `fn` with every new table. */
  onTable(fn: (t: ServiceTable) => void): void {
    this.listeners.add(fn);
  }

  /** Takes the table on disk (if any), then follows the API in the background. */
  start(): void {
    const log = this.opts.logger;
    try {
      const saved = loadServiceTable(this.opts.dataDir);
      if (saved) {
        this.swap(saved);
        log.info(
          {
            services: saved.services.length,
            ageSeconds: Math.round((Date.now() - Date.parse(saved.syncedAt)) / 1000),
          },
          "service table loaded from disk",
        );
      }
    } catch (err) {
      log.error(
        { err: (err as Error).message },
        "the saved service table is unreadable; ignoring it",
      );
    }
    const informer = <T extends Service | EndpointSlice>(type: typeof SERVICE | typeof SLICE) => {
      const inf = new Informer<T>(this.opts.client, type as never, {
        backoffInitialMs: 200,
        backoffMaxMs: 5_000,
        logger: log,
      });
      inf.addEventHandler({
        onAdd: () => this.schedule(),
        onUpdate: (_o, _n, resync) => {
          if (!resync) this.schedule();
        },
        onDelete: () => this.schedule(),
      });
      inf.start(this.abort.signal);
      return inf;
    };
    this.services = informer<Service>(SERVICE);
    this.slices = informer<EndpointSlice>(SLICE);
    Promise.all([
      this.services.waitForSync(this.abort.signal),
      this.slices.waitForSync(this.abort.signal),
    ]).then(
      () => this.schedule(),
      () => {},
    );
  }

  private synced(): boolean {
    return Boolean(this.services?.hasSynced() && this.slices?.hasSynced());
  }

  private schedule(): void {
    if (this.timer || !this.synced() || this.abort.signal.aborted) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.rebuild();
    }, this.opts.debounceMs ?? DEFAULT_DEBOUNCE_MS);
  }

  private rebuild(): void {
    if (!this.services || !this.slices) return;
    const built = buildServiceTable(
      { services: this.services.list(), slices: this.slices.list() },
      this.current,
    );
    for (const w of built.warnings)
      this.opts.logger.warn({ warning: w }, "service table: kept last good");
    if (sameServices(this.current, built.table)) return;
    this.swap(built.table);
    try {
      saveServiceTable(this.opts.dataDir, built.table);
    } catch (err) {
      this.opts.logger.error({ err: (err as Error).message }, "could not save the service table");
    }
    this.opts.logger.info({ services: built.table.services.length }, "service table updated");
  }

  private swap(table: ServiceTable): void {
    this.current = table;
    for (const fn of this.listeners) fn(table);
  }

  async stop(): Promise<void> {
    this.abort.abort();
    clearTimeout(this.timer);
  }
}
