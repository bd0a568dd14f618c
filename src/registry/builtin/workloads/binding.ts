/**
 * core/v1 Binding and the Pod's `binding` subresource (Kubernetes' BindingREST):
 * a POST of a Binding to an unbound Pod sets spec.nodeName to the target, copies
 * the Binding's annotations, and sets PodScheduled=True, in one write. A Pod
 * already bound, or being deleted, refuses with 409 Conflict worded as
 * Kubernetes words it; a Binding that names a uid must name the Pod's.
 */
import { errors, type KubeObject, nowTimestamp } from "@setpoint/api";
import type { CreateSubresource } from "../../types.ts";
import { invalid, required } from "../causes.ts";
import { workloadDefinition } from "./define.ts";

type Obj = Record<string, unknown>;

/** The Binding kind, as the body and schema of `pods/<name>/binding`. */
export const bindingDefinition = workloadDefinition({
  group: "",
  kind: "Binding",
  plural: "bindings",
  namespaced: true,
  status: false,
  generation: false,
  columns: [],
  verbs: ["create"],
  strategy: {
    validate: (obj) => {
      const target = (obj.target ?? {}) as Obj;
      const causes = [];
      if (!target.name) causes.push(required("target.name", ""));
      if (target.kind && target.kind !== "Node") {
        causes.push(invalid("target.kind", target.kind, "must be empty or 'Node'"));
      }
      return causes;
    },
  },
});

/** Sets PodScheduled=True on `status`, keeping its transition time when it already was. */
function setScheduled(status: Obj, now: Date): void {
  const conditions = Array.isArray(status.conditions) ? (status.conditions as Obj[]) : [];
  const existing = conditions.find((c) => c.type === "PodScheduled");
  if (existing) {
    if (existing.status !== "True") {
      existing.lastTransitionTime = nowTimestamp(now);
      existing.status = "True";
    }
    delete existing.reason;
    delete existing.message;
  } else {
    conditions.push({
      type: "PodScheduled",
      status: "True",
      lastTransitionTime: nowTimestamp(now),
    });
  }
  status.conditions = conditions;
}

/** The Pod a Binding makes of `pod` (a copy of the stored one). */
export function bindPod(binding: KubeObject, pod: KubeObject, now: Date): KubeObject {
  const name = pod.metadata.name ?? "";
  const subject = { group: "", resource: "pods", name };
  const uid = binding.metadata.uid;
  if (uid && uid !== pod.metadata.uid) {
    throw errors.conflict(
      subject,
      `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${pod.metadata.uid ?? ""}`,
    );
  }
  const bindingSubject = { group: "", resource: "pods/binding", name };
  if (pod.metadata.deletionTimestamp) {
    throw errors.conflict(
      bindingSubject,
      `pod ${name} is being deleted, cannot be assigned to a host`,
    );
  }
  const spec = (pod.spec ?? {}) as Obj;
  if (spec.nodeName) {
    throw errors.conflict(
      bindingSubject,
      `pod ${name} is already assigned to node "${String(spec.nodeName)}"`,
    );
  }
  spec.nodeName = String(((binding.target ?? {}) as Obj).name ?? "");
  pod.spec = spec;
  const annotations = binding.metadata.annotations;
  if (annotations && Object.keys(annotations).length > 0) {
    pod.metadata.annotations = { ...(pod.metadata.annotations ?? {}), ...annotations };
  }
  const status = (pod.status ?? {}) as Obj;
  setScheduled(status, now);
  pod.status = status;
  return pod;
}

/** `pods/<name>/binding`. */
export const podBindingSubresource: CreateSubresource = {
  name: "binding",
  kind: bindingDefinition,
  updateParent: bindPod,
};
