/**
 * GET on a subresource streamed from a node (`pods/<name>/log`), as kube-apiserver
 * serves it: the object is read, its definition says what to ask of which node
 * (NodeStreamSubresource.locate), and the node's agent is reached over HTTPS at the
 * address and port its Node publishes (`status.addresses`, preferring InternalIP,
 * then ExternalIP, then Hostname, as kubeadm configures kube-apiserver; the port in
 * `status.daemonEndpoints.kubeletEndpoint`, 10250 when unset). The apiserver
 * presents its node client certificate (NodeClient); like kube-apiserver without
 * --kubelet-certificate-authority it does not verify the agent's self-signed
 * serving certificate.
 *
 * The agent's answer is streamed back as it comes (text/plain, chunked, nothing
 * buffered), and the connection to the agent is closed as soon as the client goes.
 * An agent's error becomes the Status kube-apiserver makes of it (400 → BadRequest
 * with the agent's text as message, 500 → InternalError, ...); an agent that cannot
 * be reached is a 500 worded as Go's HTTP client words it.
 */
import { request as httpsRequest } from "node:https";
import { errors, failure, type KubeObject, type StatusReason } from "@setpoint/api";
import { objectKey } from "../../registry/storage-keys.ts";
import { type NodeStreamSubresource, storageVersion } from "../../registry/types.ts";
import { ResourceStore } from "../store/index.ts";
import type { RequestScope } from "./context.ts";

/** The port of a node's agent when its Node names none (the kubelet's). */
export const DEFAULT_NODE_AGENT_PORT = 10250;
/** Longest wait for a node's agent to accept the connection and answer. */
export const NODE_CONNECT_TIMEOUT_MS = 10_000;
/** Most of an agent's error answer read into the Status message. */
export const NODE_ERROR_BODY_BYTES = 50_000;

/** The client certificate the apiserver presents to the nodes' agents. */
export interface NodeClient {
  cert: string;
  key: string;
}

const ADDRESS_PREFERENCE = ["InternalIP", "ExternalIP", "Hostname"];

interface NodeObject extends KubeObject {
  status?: {
    addresses?: { type?: string; address?: string }[];
    daemonEndpoints?: { kubeletEndpoint?: { Port?: number } };
  };
}

/** Where a Node's agent listens, as kube-apiserver's NodeConnectionInfoGetter finds it. */
export async function nodeEndpoint(
  scope: RequestScope,
  name: string,
): Promise<{ host: string; port: number }> {
  const def = scope.ctx.registry.get("", "nodes");
  if (!def) throw errors.internal("no resource nodes is served");
  const cache = scope.ctx.caches.forDef(def);
  await cache.ready();
  const entry = cache.get(objectKey(def, undefined, name));
  if (!entry) throw errors.notFound({ group: "", resource: "nodes", name });
  const node = JSON.parse(entry.json) as NodeObject;
  const addresses = node.status?.addresses ?? [];
  let host: string | undefined;
  for (const type of ADDRESS_PREFERENCE) {
    host = addresses.find((a) => a.type === type && a.address)?.address;
    if (host) break;
  }
  if (!host) {
    const known = addresses.map((a) => `{${a.type} ${a.address}}`).join(" ");
    throw errors.internal(`no preferred addresses found; known addresses: [${known}]`);
  }
  const port = node.status?.daemonEndpoints?.kubeletEndpoint?.Port;
  return { host, port: port && port > 0 ? port : DEFAULT_NODE_AGENT_PORT };
}

/** The Status kube-apiserver makes of a node's error answer (GenericHttpResponseChecker). */
function statusFromNode(code: number, text: string, scope: RequestScope) {
  if (code === 400) return errors.badRequest(text);
  if (code === 500) return errors.internal(text);
  const reasons: Record<number, StatusReason> = {
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    503: "ServiceUnavailable",
  };
  return failure(code, reasons[code] ?? "", text, {
    name: scope.name ?? "",
    kind: `${scope.def.names.plural}/${scope.subresource}`,
  });
}

/** Go's words for a dial failure, e.g. `connect: connection refused`. */
export function dialError(err: NodeJS.ErrnoException, host: string, port: number): string {
  const target = `${host.includes(":") ? `[${host}]` : host}:${port}`;
  switch (err.code) {
    case "ECONNREFUSED":
      return `dial tcp ${target}: connect: connection refused`;
    case "EHOSTUNREACH":
      return `dial tcp ${target}: connect: no route to host`;
    case "ETIMEDOUT":
    case "ESOCKETTIMEDOUT":
      return `dial tcp ${target}: i/o timeout`;
    case "ENOTFOUND":
      return `dial tcp: lookup ${host}: no such host`;
    default:
      return err.message;
  }
}

/** The object a node subresource belongs to (a Pod), read as the caller. */
export function readParent(scope: RequestScope): Promise<KubeObject> {
  const { ctx, def } = scope;
  return new ResourceStore(ctx, {
    definition: def,
    version: storageVersion(def),
    user: scope.user,
    ...(scope.namespace !== undefined ? { namespace: scope.namespace } : {}),
    name: scope.name ?? "",
  }).get();
}

/** The 500 an apiserver without a client certificate for the agents answers. */
export function requireNodeClient(client: NodeClient | undefined): asserts client is NodeClient {
  if (!client) {
    throw errors.internal(
      "this apiserver has no client certificate for the nodes' agents (its data dir has no CA key)",
    );
  }
}

/** The path and query a located subresource asks the agent for. */
export function agentPath(location: { path: string; query: URLSearchParams }): string {
  const query = location.query.toString();
  return `${location.path}${query ? `?${query}` : ""}`;
}

/** Serves GET on `sub` of the object `scope` names, streaming the node's answer. */
export async function serveNodeStream(
  scope: RequestScope,
  sub: NodeStreamSubresource,
  client: NodeClient | undefined,
): Promise<void> {
  const { req, res } = scope;
  const obj = await readParent(scope);
  const location = sub.locate(obj, scope.query.params);
  if (!location) {
    res.writeHead(200, { "Content-Type": "text/plain" });
    res.end();
    return;
  }
  requireNodeClient(client);
  const { host, port } = await nodeEndpoint(scope, location.node);
  const path = agentPath(location);
  const url = `https://${host.includes(":") ? `[${host}]` : host}:${port}${path}`;
  await new Promise<void>((done, fail) => {
    let answered = false;
    const upstream = httpsRequest({
      host,
      port,
      path,
      method: "GET",
      cert: client.cert,
      key: client.key,
      rejectUnauthorized: false,
      // A connection of its own: closed with the stream, none left idle to an agent.
      agent: false,
      timeout: NODE_CONNECT_TIMEOUT_MS,
      headers: { accept: "text/plain" },
    });
    // The client went away: close the node's stream too.
    const onClientGone = () => {
      if (!res.writableFinished) upstream.destroy();
    };
    res.once("close", onClientGone);
    upstream.on("timeout", () => {
      if (!answered) upstream.destroy(Object.assign(new Error("timeout"), { code: "ETIMEDOUT" }));
    });
    upstream.on("error", (err: NodeJS.ErrnoException) => {
      if (answered) {
        // Mid-stream: end what was sent.
        if (!res.writableEnded) res.end();
        done();
        return;
      }
      fail(failure(500, "", `Get ${JSON.stringify(url)}: ${dialError(err, host, port)}`));
    });
    upstream.on("response", (answer) => {
      answered = true;
      upstream.setTimeout(0);
      const code = answer.statusCode ?? 500;
      if (code < 200 || code > 206) {
        const chunks: Buffer[] = [];
        let size = 0;
        answer.on("data", (c: Buffer) => {
          if (size < NODE_ERROR_BODY_BYTES) chunks.push(c);
          size += c.length;
        });
        answer.on("end", () => {
          const text = Buffer.concat(chunks).subarray(0, NODE_ERROR_BODY_BYTES).toString("utf8");
          fail(statusFromNode(code, text.replace(/\n$/, ""), scope));
        });
        answer.on("error", () => fail(errors.internal("the node's answer broke off")));
        return;
      }
      res.writeHead(200, {
        "Content-Type": String(answer.headers["content-type"] ?? "text/plain"),
        "Cache-Control": "no-cache, private",
      });
      res.flushHeaders();
      answer.pipe(res);
      answer.on("end", () => done());
      answer.on("error", () => {
        if (!res.writableEnded) res.end();
        done();
      });
      res.once("close", () => {
        answer.destroy();
        done();
      });
    });
    req.once("close", () => {
      if (req.destroyed && !res.writableEnded) onClientGone();
    });
    upstream.end();
  });
}
