import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const at = (path: string) => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  resolve: {
    // The workspace packages (and this package's own entry points) resolve to their
    // TypeScript sources, as in tsconfig.json's paths.
    alias: [
      { find: /^@setpoint\/api$/, replacement: at("./packages/api/src/index.ts") },
      {
        find: /^@setpoint\/api\/managedfields$/,
        replacement: at("./packages/api/src/managedfields/index.ts"),
      },
      { find: /^@setpoint\/runtime$/, replacement: at("./packages/runtime/src/index.ts") },
      // The package's own library entry, as the examples import it.
      { find: /^setpoint\/testenv$/, replacement: at("./src/testenv/index.ts") },
    ],
  },
  test: {
    include: ["test/**/*.test.ts", "examples/**/*.test.ts"],
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 60_000,
    teardownTimeout: 20_000,
  },
});
