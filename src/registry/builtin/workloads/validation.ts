/**
 * The workload kinds' validation beyond their schemas, with Kubernetes' messages for
 * the common mistakes: a pod spec without containers, with unnamed, badly named or
 * duplicate containers, without images, with ports out of range, with a restart
 * policy its owner does not allow; a controller whose selector is missing, empty or
 * does not match its template's labels; a rolling update that can never progress;
 * and the fields that are immutable once set (a Pod's spec but for images,
 * tolerations added and a shorter deadline; the selector of a Deployment,
 * ReplicaSet or Job).
 */
import {
  CauseType,
  type KubeObject,
  labelSelectorFromMetav1,
  matchesLabels,
  type StatusCause,
} from "@setpoint/api";
import { field } from "../build.ts";
import { deepEqual, forbidden, invalid, notSupported, required } from "../causes.ts";
import { goLabelSelector, goStringMap } from "./go-values.ts";

type Obj = Record<string, unknown>;

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_LABEL_MESSAGE =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/** Every restart policy a Pod may have. */
export const RESTART_POLICIES = ["Always", "OnFailure", "Never"];

function objectsAt(v: unknown): Obj[] {
  return Array.isArray(v) ? v.filter((x): x is Obj => typeof x === "object" && x !== null) : [];
}

function asObj(v: unknown): Obj | undefined {
  return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Obj) : undefined;
}

function validateContainers(list: Obj[], path: string, seen: Set<string>): StatusCause[] {
  const causes: StatusCause[] = [];
  list.forEach((c, i) => {
    const at = `${path}[${i}]`;
    const name = typeof c.name === "string" ? c.name : "";
    if (!name) causes.push(required(`${at}.name`));
    else if (name.length > 63 || !DNS1123_LABEL.test(name)) {
      causes.push(
        invalid(
          `${at}.name`,
          name,
          name.length > 63 ? "must be no more than 63 characters" : DNS1123_LABEL_MESSAGE,
        ),
      );
    } else if (seen.has(name)) {
      causes.push({
        reason: CauseType.Duplicate,
        field: `${at}.name`,
        message: `Duplicate value: ${JSON.stringify(name)}`,
      });
    }
    if (name) seen.add(name);
    if (typeof c.image !== "string" || c.image.trim() === "") causes.push(required(`${at}.image`));
    objectsAt(c.ports).forEach((p, j) => {
      const port = p.containerPort;
      const portAt = `${at}.ports[${j}].containerPort`;
      if (port === undefined || port === 0) causes.push(required(portAt));
      else if (typeof port === "number" && (port < 1 || port > 65535)) {
        causes.push(invalid(portAt, port, "must be between 1 and 65535, inclusive"));
      }
    });
  });
  return causes;
}

/**
 * A pod spec's common mistakes at `path` ("spec", "spec.template.spec"); `restart`
 * lists the restart policies its owner allows.
 */
export function validatePodSpec(
  spec: Obj | undefined,
  path: string,
  restart: string[] = RESTART_POLICIES,
): StatusCause[] {
  const causes: StatusCause[] = [];
  const containers = objectsAt(spec?.containers);
  if (containers.length === 0) causes.push(required(`${path}.containers`));
  const seen = new Set<string>();
  causes.push(
    ...validateContainers(objectsAt(spec?.initContainers), `${path}.initContainers`, seen),
  );
  causes.push(...validateContainers(containers, `${path}.containers`, seen));
  const policy = spec?.restartPolicy;
  if (typeof policy === "string" && !restart.includes(policy)) {
    causes.push(notSupported(`${path}.restartPolicy`, policy, restart));
  }
  return causes;
}

/** The parts of a Pod's spec an update may change, as Kubernetes words it. */
export const POD_UPDATE_FORBIDDEN =
  "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/** `spec` with what an update may change taken from `old`. */
function podSpecWithoutMutable(spec: Obj, old: Obj): Obj {
  const out: Obj = { ...spec };
  const images = (list: unknown, from: unknown) => {
    const olds = objectsAt(from);
    return Array.isArray(list)
      ? list.map((c, i) =>
          asObj(c) && olds[i] ? { ...(c as Obj), image: olds[i].image } : (c as unknown),
        )
      : list;
  };
  out.containers = images(spec.containers, old.containers);
  if (spec.initContainers !== undefined) {
    out.initContainers = images(spec.initContainers, old.initContainers);
  }
  out.activeDeadlineSeconds = old.activeDeadlineSeconds;
  out.tolerations = old.tolerations;
  out.terminationGracePeriodSeconds = old.terminationGracePeriodSeconds;
  // The binding subresource sets nodeName once, on an unbound Pod.
  if (!old.nodeName) out.nodeName = old.nodeName;
  for (const k of Object.keys(out)) if (out[k] === undefined) delete out[k];
  return out;
}

function podUpdateCauses(spec: Obj, old: Obj): StatusCause[] {
  const causes: StatusCause[] = [];
  if (!deepEqual(podSpecWithoutMutable(spec, old), podSpecWithoutMutable(old, old))) {
    causes.push(forbidden("spec", POD_UPDATE_FORBIDDEN));
  }
  const oldTolerations = objectsAt(old.tolerations);
  const tolerations = objectsAt(spec.tolerations);
  if (!oldTolerations.every((t) => tolerations.some((n) => deepEqual(n, t)))) {
    causes.push(
      forbidden(
        "spec.tolerations",
        "existing toleration can not be modified except its tolerationSeconds",
      ),
    );
  }
  const deadline = spec.activeDeadlineSeconds;
  const oldDeadline = old.activeDeadlineSeconds;
  if (typeof oldDeadline === "number" && (typeof deadline !== "number" || deadline > oldDeadline)) {
    causes.push(
      invalid(
        "spec.activeDeadlineSeconds",
        deadline ?? null,
        "must be less than or equal to previous value",
      ),
    );
  }
  const grace = spec.terminationGracePeriodSeconds;
  const oldGrace = old.terminationGracePeriodSeconds;
  if (
    !deepEqual(grace, oldGrace) &&
    !(typeof oldGrace === "number" && oldGrace < 0 && grace === 1)
  ) {
    causes.push(forbidden("spec", POD_UPDATE_FORBIDDEN));
  }
  return dedupe(causes);
}

function dedupe(causes: StatusCause[]): StatusCause[] {
  const seen = new Set<string>();
  return causes.filter((c) => {
    const k = `${c.field}\u0000${c.message}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/** A Pod: its spec's mistakes on create; on update, only the changes Kubernetes allows. */
export function validatePod(obj: KubeObject, old: KubeObject | undefined): StatusCause[] {
  const spec = asObj(field(obj, "spec"));
  if (!old) return validatePodSpec(spec, "spec");
  const oldSpec = asObj(field(old, "spec"));
  // An unchanged spec (status writes, most metadata writes) changes nothing forbidden.
  if (!spec || !oldSpec || spec === oldSpec || deepEqual(spec, oldSpec)) return [];
  return podUpdateCauses(spec, oldSpec);
}

function nonNegative(obj: KubeObject, path: string[]): StatusCause[] {
  const v = field(obj, ...path);
  return typeof v === "number" && v < 0
    ? [invalid(path.join("."), v, "must be greater than or equal to 0")]
    : [];
}

/**
 * A controller's selector and template at spec: the selector is required and not
 * empty, and selects the template's labels; the template's pod spec allows
 * `restart`. `kind` names the owner in the empty-selector message.
 */
function validateSelectorAndTemplate(
  obj: KubeObject,
  kind: string,
  restart: string[],
): StatusCause[] {
  const causes: StatusCause[] = [];
  const selector = asObj(field(obj, "spec", "selector"));
  const labels = asObj(field(obj, "spec", "template", "metadata", "labels")) as
    | Record<string, string>
    | undefined;
  if (!selector) causes.push(required("spec.selector"));
  else {
    const empty =
      Object.keys(asObj(selector.matchLabels) ?? {}).length === 0 &&
      objectsAt(selector.matchExpressions).length === 0;
    if (empty) {
      causes.push(
        invalidShown(
          "spec.selector",
          goLabelSelector(selector),
          `empty selector is invalid for ${kind}`,
        ),
      );
    } else {
      let matches = false;
      try {
        matches = matchesLabels(labelSelectorFromMetav1(selector as never), labels ?? {});
      } catch {
        matches = true; // a malformed selector is the schema's and the selector parser's to report
      }
      if (!matches) {
        causes.push(
          invalidShown(
            "spec.template.metadata.labels",
            goStringMap(labels),
            "`selector` does not match template `labels`",
          ),
        );
      }
    }
  }
  causes.push(
    ...validatePodSpec(
      asObj(field(obj, "spec", "template", "spec")),
      "spec.template.spec",
      restart,
    ),
  );
  return causes;
}

/** `field: Invalid value: <shown>: detail`, the value already formatted as Go prints it. */
function invalidShown(fieldPath: string, shown: string, detail: string): StatusCause {
  return {
    reason: "FieldValueInvalid",
    field: fieldPath,
    message: `Invalid value: ${shown}: ${detail}`,
  };
}

function selectorImmutable(obj: KubeObject, old: KubeObject | undefined): StatusCause[] {
  if (!old) return [];
  const selector = field(obj, "spec", "selector");
  if (deepEqual(selector, field(old, "spec", "selector"))) return [];
  return [invalidShown("spec.selector", goLabelSelector(asObj(selector)), "field is immutable")];
}

/** An int-or-percent as a number of Pods out of 100 (percent) or itself. */
function intOrPercent(v: unknown): number | undefined {
  if (typeof v === "number") return v;
  if (typeof v === "string" && /^\d+%$/.test(v)) return Number(v.slice(0, -1));
  return undefined;
}

function validateStrategy(obj: KubeObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const strategy = asObj(field(obj, "spec", "strategy"));
  if (!strategy) return causes;
  const type = strategy.type;
  if (type !== undefined && type !== "RollingUpdate" && type !== "Recreate") {
    causes.push(notSupported("spec.strategy.type", type, ["Recreate", "RollingUpdate"]));
  }
  const ru = asObj(strategy.rollingUpdate);
  if (type === "Recreate" && ru) {
    causes.push(
      forbidden(
        "spec.strategy.rollingUpdate",
        "may not be specified when strategy `type` is 'Recreate'",
      ),
    );
  }
  if (type === "RollingUpdate" && ru) {
    const unavailable = intOrPercent(ru.maxUnavailable);
    const surge = intOrPercent(ru.maxSurge);
    if (typeof ru.maxUnavailable === "string" && unavailable !== undefined && unavailable > 100) {
      causes.push(
        invalid(
          "spec.strategy.rollingUpdate.maxUnavailable",
          ru.maxUnavailable,
          "must not be greater than 100%",
        ),
      );
    }
    if (unavailable === 0 && surge === 0) {
      causes.push(
        invalid(
          "spec.strategy.rollingUpdate.maxUnavailable",
          ru.maxUnavailable,
          "may not be 0 when `maxSurge` is 0",
        ),
      );
    }
  }
  const deadline = field(obj, "spec", "progressDeadlineSeconds");
  const minReady = field(obj, "spec", "minReadySeconds") ?? 0;
  if (typeof deadline === "number" && typeof minReady === "number" && deadline <= minReady) {
    causes.push(
      invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"),
    );
  }
  return causes;
}

/** An apps/v1 Deployment. */
export function validateDeployment(obj: KubeObject, old: KubeObject | undefined): StatusCause[] {
  return [
    ...nonNegative(obj, ["spec", "replicas"]),
    ...nonNegative(obj, ["spec", "minReadySeconds"]),
    ...nonNegative(obj, ["spec", "revisionHistoryLimit"]),
    ...validateSelectorAndTemplate(obj, "deployment", ["Always"]),
    ...validateStrategy(obj),
    ...selectorImmutable(obj, old),
  ];
}

/** An apps/v1 ReplicaSet. */
export function validateReplicaSet(obj: KubeObject, old: KubeObject | undefined): StatusCause[] {
  return [
    ...nonNegative(obj, ["spec", "replicas"]),
    ...nonNegative(obj, ["spec", "minReadySeconds"]),
    ...validateSelectorAndTemplate(obj, "replicaset", ["Always"]),
    ...selectorImmutable(obj, old),
  ];
}

/** A batch/v1 Job (after its selector was generated). */
export function validateJob(obj: KubeObject, old: KubeObject | undefined): StatusCause[] {
  const causes = [
    ...nonNegative(obj, ["spec", "parallelism"]),
    ...nonNegative(obj, ["spec", "completions"]),
    ...nonNegative(obj, ["spec", "backoffLimit"]),
    ...validateSelectorAndTemplate(obj, "job", ["OnFailure", "Never"]),
    ...selectorImmutable(obj, old),
  ];
  const deadline = field(obj, "spec", "activeDeadlineSeconds");
  if (typeof deadline === "number" && deadline <= 0) {
    causes.push(invalid("spec.activeDeadlineSeconds", deadline, "must be greater than 0"));
  }
  if (old) {
    const mode = field(obj, "spec", "completionMode");
    if (!deepEqual(mode, field(old, "spec", "completionMode"))) {
      causes.push(invalid("spec.completionMode", mode ?? "", "field is immutable"));
    }
    const completions = field(obj, "spec", "completions");
    if (mode !== "Indexed" && !deepEqual(completions, field(old, "spec", "completions"))) {
      causes.push(invalid("spec.completions", completions ?? null, "field is immutable"));
    }
  }
  return causes;
}
