/** coordination.k8s.io/v1 Lease. */
import type { KubeObject, StatusCause } from "@setpoint/api";
import { defineSchema, refSchema } from "../definitions.ts";
import type { ResourceDefinition } from "../types.ts";
import { fieldObject, fieldString, int32, object, str } from "./build.ts";
import { forbidden, invalid, notSupported, qualifiedNameErrors } from "./causes.ts";
import { kindSchema, microTime } from "./meta-schemas.ts";

/** Definition-name prefix of coordination.k8s.io/v1 types. */
export const COORDINATION_V1 = "io.k8s.api.coordination.v1";

/** Strategies for coordinated leader election that need no "/" prefix. */
const LEASE_STRATEGIES = ["OldestEmulationVersion"];

const leaseSpecSchema = defineSchema(
  `${COORDINATION_V1}.LeaseSpec`,
  object(
    {
      acquireTime: microTime("acquireTime is a time when the current lease was acquired."),
      holderIdentity: str("holderIdentity contains the identity of the holder of a current lease."),
      leaseDurationSeconds: int32(
        "leaseDurationSeconds is how long candidates for a lease need to wait to force acquire it, measured against the time of the last observed renewTime.",
      ),
      leaseTransitions: int32(
        "leaseTransitions is the number of transitions of a lease between holders.",
      ),
      preferredHolder: str(
        "preferredHolder signals to a lease holder that the lease has a more optimal holder and should be given up. Can only be set if strategy is also set.",
      ),
      renewTime: microTime(
        "renewTime is a time when the current holder of a lease has last updated the lease.",
      ),
      strategy: str(
        "strategy indicates the strategy for picking the leader for coordinated leader election. If unset, there is no active coordination for this lease.",
      ),
    },
    "LeaseSpec is a specification of a Lease.",
  ),
);

export const leaseSchema = kindSchema(
  `${COORDINATION_V1}.Lease`,
  "Lease defines a lease concept.",
  { spec: refSchema(leaseSpecSchema, "spec contains the specification of the Lease.") },
);

function validateLease(obj: KubeObject): StatusCause[] {
  const spec = fieldObject(obj, "spec") ?? {};
  const causes: StatusCause[] = [];
  const duration = spec.leaseDurationSeconds;
  if (typeof duration === "number" && duration <= 0) {
    causes.push(invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"));
  }
  const transitions = spec.leaseTransitions;
  if (typeof transitions === "number" && transitions < 0) {
    causes.push(
      invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0"),
    );
  }
  const strategy = typeof spec.strategy === "string" ? spec.strategy : undefined;
  if (strategy !== undefined) {
    if (!strategy.includes("/")) {
      if (!LEASE_STRATEGIES.includes(strategy)) {
        causes.push(notSupported("spec.strategy", strategy, LEASE_STRATEGIES));
      }
    } else {
      for (const msg of qualifiedNameErrors(strategy)) {
        causes.push(invalid("spec.strategy", strategy, msg));
      }
    }
  }
  const preferred = spec.preferredHolder;
  if (typeof preferred === "string" && preferred !== "" && !strategy) {
    causes.push(
      forbidden("spec.preferredHolder", "may only be specified if `strategy` is defined"),
    );
  }
  return causes;
}

export const leaseDefinition: ResourceDefinition = {
  group: "coordination.k8s.io",
  names: {
    plural: "leases",
    singular: "lease",
    kind: "Lease",
    listKind: "LeaseList",
    shortNames: [],
    categories: [],
  },
  namespaced: true,
  custom: false,
  strategicMergePatch: true,
  protobufMessage: "k8s.io.api.coordination.v1.Lease",
  versions: [
    {
      name: "v1",
      served: true,
      storage: true,
      schema: leaseSchema,
      statusSubresource: false,
      printerColumns: [
        {
          name: "Holder",
          type: "string",
          priority: 0,
          description: "holderIdentity contains the identity of the holder of a current lease.",
          value: (obj) => fieldString(obj, "spec", "holderIdentity"),
        },
      ],
    },
  ],
  strategy: {
    allowUnconditionalUpdate: true,
    allowCreateOnUpdate: true,
    tracksGeneration: false,
    validate: validateLease,
  },
};
