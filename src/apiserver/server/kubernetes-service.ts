/**
 * The `kubernetes` Service in `default`, as kube-apiserver keeps it: cluster IP
 * the first address of the service range, port 443 (named https) to the
 * apiserver's own port, with an Endpoints and an EndpointSlice of the same name
 * pointing at the apiserver. Written through the server's own HTTP API at start,
 * and corrected when what is stored differs (another port after a restart).
 */
import { firstServiceIP } from "../../registry/builtin/index.ts";
import { type LoopbackTarget, loopbackRequest } from "./bootstrap.ts";

const NAME = "kubernetes";
const NAMESPACE = "default";

export interface KubernetesServiceOptions {
  /** The cluster IP range (its first address is the Service's). */
  clusterIPRange: string;
  /** Where clients reach the apiserver: its address and port. */
  address: string;
  port: number;
}

type Obj = Record<string, unknown>;

/** Creates `obj` at `path`, or replaces the stored one when `differs` says it is not as wanted. */
async function ensure(
  target: LoopbackTarget,
  collection: string,
  obj: Obj,
  differs: (stored: Obj) => boolean,
): Promise<void> {
  const path = `${collection}/${NAME}`;
  let got = await loopbackRequest(target, "GET", path);
  if (got.code === 404) {
    const res = await loopbackRequest(target, "POST", collection, obj);
    if (res.code === 201 || res.code === 409) return;
    // Another apiserver on the same storage may have created it meanwhile: its cluster
    // IP is then taken (422, as kube-apiserver answers a second create naming it).
    got = await loopbackRequest(target, "GET", path);
    if (got.code !== 200) {
      throw new Error(`creating ${path}: HTTP ${res.code} ${JSON.stringify(res.body)}`);
    }
  }
  if (got.code !== 200) throw new Error(`reading ${path}: HTTP ${got.code}`);
  const stored = got.body as Obj;
  if (!differs(stored)) return;
  const meta = stored.metadata as Obj;
  const next = { ...stored, ...obj, metadata: { ...meta, ...(obj.metadata as Obj) } };
  const res = await loopbackRequest(target, "PUT", path, next);
  if (res.code !== 200 && res.code !== 409) {
    throw new Error(`updating ${path}: HTTP ${res.code} ${JSON.stringify(res.body)}`);
  }
}

const json = (v: unknown) => JSON.stringify(v);

/** Ensures the `kubernetes` Service, its Endpoints and its EndpointSlice. */
export async function ensureKubernetesService(
  target: LoopbackTarget,
  opts: KubernetesServiceOptions,
): Promise<void> {
  const clusterIP = firstServiceIP(opts.clusterIPRange);
  const servicePorts = [{ name: "https", port: 443, protocol: "TCP", targetPort: opts.port }];
  await ensure(
    target,
    `/api/v1/namespaces/${NAMESPACE}/services`,
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: {
        name: NAME,
        namespace: NAMESPACE,
        labels: { component: "apiserver", provider: "kubernetes" },
      },
      spec: { type: "ClusterIP", clusterIP, ports: servicePorts, sessionAffinity: "None" },
    },
    (s) => json((s.spec as Obj | undefined)?.ports) !== json(servicePorts),
  );
  const subsets = [
    {
      addresses: [{ ip: opts.address }],
      ports: [{ name: "https", port: opts.port, protocol: "TCP" }],
    },
  ];
  await ensure(
    target,
    `/api/v1/namespaces/${NAMESPACE}/endpoints`,
    {
      apiVersion: "v1",
      kind: "Endpoints",
      metadata: {
        name: NAME,
        namespace: NAMESPACE,
        labels: { "endpointslice.kubernetes.io/skip-mirror": "true" },
      },
      subsets,
    },
    (e) => json(e.subsets) !== json(subsets),
  );
  const endpoints = [{ addresses: [opts.address], conditions: { ready: true } }];
  const ports = [{ name: "https", port: opts.port, protocol: "TCP" }];
  await ensure(
    target,
    `/apis/discovery.k8s.io/v1/namespaces/${NAMESPACE}/endpointslices`,
    {
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: {
        name: NAME,
        namespace: NAMESPACE,
        labels: { "kubernetes.io/service-name": NAME },
      },
      addressType: "IPv4",
      endpoints,
      ports,
    },
    (s) => json(s.endpoints) !== json(endpoints) || json(s.ports) !== json(ports),
  );
}
