/**
 * Setpoint's controller runtime: the public API.
 *
 * A client for any Kubernetes-compatible API server, shared informers, and the
 * control loop on top: a work queue with per-key backoff, controllers and their
 * builder, predicates, the manager (leader election, metrics, health probes),
 * Event recording and reconcile helpers. It speaks only HTTP to the server.
 * Each folder's index says how its part behaves and what bounds it: client/,
 * cache/, controller/, manager/, metrics/, helpers/, webhook/.
 *
 * ```ts
 * const WebApp = kind<WebAppObject>("example.com/v1", "WebApp");
 * const mgr = new Manager({
 *   restConfig: loadKubeconfig(),
 *   leaderElection: { id: "webapp-controller", namespace: "default" },
 *   metricsAddr: ":8080",
 *   healthAddr: ":8081",
 * });
 * mgr
 *   .controller("webapp")
 *   .for(WebApp, { predicates: [generationChanged()] })
 *   .owns(ConfigMap)
 *   .withOptions({ finalizers: ["example.com/cleanup"] })
 *   .complete(async (req, ctx) => {
 *     const app = await ctx.reader.get(WebApp, req.name, req.namespace);
 *     await createOrUpdate(ctx.client, configMapFor(app), (cm) => {
 *       cm.data = { image: app.spec.image };
 *       setControllerReference(app, cm);
 *     }, { reader: ctx.reader });
 *   });
 * const stop = new AbortController();
 * process.once("SIGTERM", () => stop.abort());
 * await mgr.run(stop.signal); // drains, releases the lease, returns
 * ```
 */

export * from "./cache/index.ts";
export * from "./client/index.ts";
export { type Clock, realClock, type TimerHandle } from "./clock.ts";
export * from "./controller/index.ts";
export * from "./helpers/index.ts";
export { createLogger, type Logger, type LoggerOptions, silentLogger } from "./log.ts";
export * from "./manager/index.ts";
export * from "./metrics/index.ts";
export * from "./webhook/index.ts";
