/**
 * The test server (test/helpers/test-server.ts: an apiserver in the test process on
 * an in-memory SQLite store the test can compact, reachable over real HTTP(S) on a
 * free port, with a kubeconfig for kubectl and client-node), in the terms the
 * end-to-end tests use: a plain-request Target and close().
 */
import {
  startTestServer,
  type TestServer,
  type TestServerOptions,
} from "../../helpers/test-server.ts";
import type { Target } from "./http.ts";

export type E2eServerOptions = Pick<
  TestServerOptions,
  "kubernetesMinor" | "tls" | "registry" | "limits"
>;

export interface E2eServer extends TestServer {
  /** The kubeconfig path (kubeconfigPath). */
  readonly kubeconfig: string;
  /** How to reach the server with plain requests (admin credentials under tls). */
  readonly target: Target;
  /** stop(). */
  close(): Promise<void>;
}

/** Starts the apiserver in process; background compaction is off (tests compact explicitly). */
export async function startE2eServer(opts: E2eServerOptions = {}): Promise<E2eServer> {
  const srv = await startTestServer(opts);
  return {
    ...srv,
    kubeconfig: srv.kubeconfigPath,
    target: {
      url: srv.url,
      ...(srv.caCert ? { ca: srv.caCert } : {}),
      ...(srv.token ? { token: srv.token } : {}),
    },
    close: srv.stop,
  };
}
