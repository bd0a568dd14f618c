// Entry point of the SQLite writer thread (see writer-thread.ts). A worker thread starts
// without the TypeScript loader its parent may have registered, so it loads its
// TypeScript module through tsx, as bin/setpoint.mjs does for the command.
import { tsImport } from "tsx/esm/api";

await tsImport("./writer-thread.ts", import.meta.url);
