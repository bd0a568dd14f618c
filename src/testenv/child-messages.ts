/** What the test environment's child process (child-main.ts) tells its parent (child-process.ts) over IPC. */

/** Messages from the child to its parent. */
export type FromTestEnvChild =
  | { type: "ready"; url: string; kubeconfigPath: string }
  | { type: "error"; message: string };
