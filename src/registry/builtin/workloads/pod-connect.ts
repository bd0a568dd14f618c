/**
 * The Pod's connect subresources, as Kubernetes' ExecLocation, AttachLocation and
 * PortForwardLocation define them: `exec` (PodExecOptions: command, container,
 * stdin, stdout, stderr, tty), `attach` (PodAttachOptions, the same without
 * command) and `portforward` (PodPortForwardOptions: ports). The container is the
 * one named or the Pod's only one (400 otherwise, worded as Kubernetes words it),
 * the Pod must be bound to a node (400 `pod NAME does not have a host assigned`),
 * and the connection goes to the node's `/exec/NS/NAME/CONTAINER`,
 * `/attach/NS/NAME/CONTAINER` or `/portForward/NS/NAME` with the options as the
 * kubelet reads them (`command`, `input`, `output`, `error`, `tty`, `port`).
 */
import { errors, type KubeObject } from "@setpoint/api";
import type { NodeConnectSubresource, NodeStreamLocation } from "../../types.ts";
import { boolParam } from "./pod-log.ts";

type Named = { name?: string };

function names(list: unknown): string[] {
  return Array.isArray(list) ? (list as Named[]).map((c) => c.name ?? "") : [];
}

/** The container a connection is for (Kubernetes' streamLocation). */
function connectContainer(pod: KubeObject, container: string | undefined): string {
  const spec = (pod.spec ?? {}) as Record<string, unknown>;
  const name = pod.metadata.name ?? "";
  if (!container) {
    const main = names(spec.containers);
    if (main.length === 1) return main[0];
    if (main.length === 0) {
      throw errors.badRequest(`a container name must be specified for pod ${name}`);
    }
    const init = names(spec.initContainers);
    let message = `a container name must be specified for pod ${name}, choose one of: [${main.join(" ")}]`;
    if (init.length > 0) message += ` or one of the init containers: [${init.join(" ")}]`;
    throw errors.badRequest(message);
  }
  const all = [...names(spec.initContainers), ...names(spec.containers)];
  all.push(...names(spec.ephemeralContainers));
  if (!all.includes(container)) {
    throw errors.badRequest(`container ${container} is not valid for pod ${name}`);
  }
  return container;
}

function nodeOf(pod: KubeObject): string {
  const node = ((pod.spec ?? {}) as { nodeName?: string }).nodeName;
  if (!node) {
    throw errors.badRequest(`pod ${pod.metadata.name ?? ""} does not have a host assigned`);
  }
  return node;
}

const seg = encodeURIComponent;

/** The streams of PodExecOptions/PodAttachOptions as the kubelet's query names them. */
function streamParams(query: URLSearchParams, params: URLSearchParams): void {
  const flags = [
    ["stdin", "input"],
    ["stdout", "output"],
    ["stderr", "error"],
    ["tty", "tty"],
  ] as const;
  for (const [option, param] of flags) {
    if (boolParam(query, option)) params.set(param, "1");
  }
}

function streamLocation(
  pod: KubeObject,
  query: URLSearchParams,
  path: "exec" | "attach",
): NodeStreamLocation {
  const container = connectContainer(pod, query.get("container") ?? undefined);
  const node = nodeOf(pod);
  const params = new URLSearchParams();
  if (path === "exec") for (const c of query.getAll("command")) params.append("command", c);
  streamParams(query, params);
  const ns = pod.metadata.namespace ?? "";
  return {
    node,
    path: `/${path}/${seg(ns)}/${seg(pod.metadata.name ?? "")}/${seg(container)}`,
    query: params,
  };
}

export const podExecSubresource: NodeConnectSubresource = {
  name: "exec",
  optionsKind: "PodExecOptions",
  locate: (pod, query) => streamLocation(pod, query, "exec"),
};

export const podAttachSubresource: NodeConnectSubresource = {
  name: "attach",
  optionsKind: "PodAttachOptions",
  locate: (pod, query) => streamLocation(pod, query, "attach"),
};

export const podPortForwardSubresource: NodeConnectSubresource = {
  name: "portforward",
  optionsKind: "PodPortForwardOptions",
  spdyOverWebSocket: true,
  locate(pod, query) {
    const node = nodeOf(pod);
    const params = new URLSearchParams();
    for (const list of query.getAll("ports")) {
      for (const port of list.split(",")) {
        if (!/^\d+$/.test(port)) {
          throw errors.badRequest(
            `strconv.ParseInt: parsing ${JSON.stringify(port)}: invalid syntax`,
          );
        }
        params.append("port", port);
      }
    }
    const ns = pod.metadata.namespace ?? "";
    return { node, path: `/portForward/${seg(ns)}/${seg(pod.metadata.name ?? "")}`, query: params };
  },
};
