/**
 * The gateway inside `setpoint up`: it prints where it serves, makes the default
 * `setpoint` IngressClass, and routes an Ingress without a class to a backend.
 */
import type { Ingress } from "@setpoint/api";
import { Client, loadKubeconfig } from "@setpoint/runtime";
import { afterAll, expect, it } from "vitest";
import { type SetpointProcess, startSetpoint } from "../e2e/helpers/setpoint.ts";
import { eventually } from "../helpers/poll.ts";
import {
  type Backend,
  createService,
  get,
  ingressObject,
  startBackend,
  tempDir,
} from "./helpers.ts";

let proc: SetpointProcess | undefined;
let backend: Backend | undefined;
let client: Client | undefined;
const data = tempDir();
afterAll(async () => {
  client?.close();
  await proc?.stop();
  await backend?.kill();
  data.remove();
});

it("setpoint up serves Ingresses of its default class on the printed address", async () => {
  proc = await startSetpoint(["--gateway-listen", "127.0.0.1:0", "--data-dir", data.dir]);
  const p = proc;
  const addr = await eventually(
    () => /Gateway \(IngressClass setpoint\) at http:\/\/(\S+)/.exec(p.stdout())?.[1],
    "gateway line",
  );
  client = new Client(loadKubeconfig({ path: proc.kubeconfig }));
  const c = client;
  const cls = await eventually(
    () =>
      c
        .get({ apiVersion: "networking.k8s.io/v1", kind: "IngressClass" }, "setpoint")
        .catch(() => undefined),
    "IngressClass",
  );
  expect(cls.metadata.annotations?.["ingressclass.kubernetes.io/is-default-class"]).toBe("true");
  backend = await startBackend("up-app", "127.0.80.1");
  await createService(client, "default", "app", [backend]);
  const ing: Ingress = ingressObject("default", "app", [{ paths: [["/", "Prefix", "app"]] }]);
  delete ing.spec?.ingressClassName;
  await client.create(ing);
  const r = await eventually(
    async () => {
      const x = await get(addr, "localhost", "/hello");
      return x.status === 200 ? x : undefined;
    },
    "the app through the gateway",
    20_000,
  );
  expect(r.json?.backend).toBe("up-app");
}, 60_000);
