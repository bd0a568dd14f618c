/**
 * Storage: the MVCC key-value contract every backend implements (store.ts: one
 * global revision, compare-and-swap writes, paged lists at a revision, watches
 * that replay from a revision), its errors (errors.ts) and the checks of keys and
 * values (validate.ts). The backends, each in its folder with its entry point in
 * its index.ts: sqlite/ (embedded, the default) and etcd/ (several machines);
 * they are loaded on demand, as each pulls in its own driver.
 */
export * from "./errors.ts";
export * from "./store.ts";
