/**
 * Events about Pods, as the kubelet records them (source component "kubelet",
 * the node as host): Started, Killing, Unhealthy, BackOff, Failed. Sent once each,
 * without waiting and without retry: while the apiserver is away they are only
 * logged, and nothing the agent does waits on them.
 */
import { randomBytes } from "node:crypto";
import type { KubeObject, Pod } from "@setpoint/api";
import type { Client } from "@setpoint/runtime";
import { rfc3339 } from "./pods/index.ts";

/** Events in flight at once; more are dropped (they are also logged). */
export const MAX_EVENTS_IN_FLIGHT = 50;

export class PodEventRecorder {
  private inFlight = 0;

  constructor(
    private readonly client: Client,
    private readonly node: string,
  ) {}

  /** An Event about the Node itself (in `default`, as the kubelet records them). */
  recordNode(
    uid: string | undefined,
    type: "Normal" | "Warning",
    reason: string,
    message: string,
  ): void {
    this.create(
      "default",
      { apiVersion: "v1", kind: "Node", name: this.node, uid },
      this.node,
      type,
      reason,
      message,
    );
  }

  record(pod: Pod, type: "Normal" | "Warning", reason: string, message: string): void {
    const ns = pod.metadata.namespace ?? "default";
    this.create(
      ns,
      {
        apiVersion: "v1",
        kind: "Pod",
        namespace: ns,
        name: pod.metadata.name,
        uid: pod.metadata.uid,
      },
      pod.metadata.name ?? "",
      type,
      reason,
      message,
    );
  }

  private create(
    ns: string,
    involvedObject: Record<string, string | undefined>,
    name: string,
    type: "Normal" | "Warning",
    reason: string,
    message: string,
  ): void {
    if (this.inFlight >= MAX_EVENTS_IN_FLIGHT) return;
    const now = rfc3339();
    const event = {
      apiVersion: "v1",
      kind: "Event",
      metadata: {
        name: `${name}.${randomBytes(8).toString("hex")}`,
        namespace: ns,
      },
      involvedObject,
      reason,
      message,
      type,
      source: { component: "kubelet", host: this.node },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
      reportingComponent: "kubelet",
      reportingInstance: this.node,
    } as KubeObject;
    this.inFlight++;
    this.client
      .create(event)
      .catch(() => {})
      .finally(() => {
        this.inFlight--;
      });
  }
}
