/**
 * meta/v1 types the workload kinds use beyond the shared ObjectMeta: LabelSelector
 * (with its requirements) and Condition.
 */
import type { Schema } from "@setpoint/api";
import { defineSchema, refSchema } from "../../definitions.ts";
import { array, int64, object, str, stringMap } from "../build.ts";
import { META_V1, time } from "../meta-schemas.ts";

export const labelSelectorRequirementSchema: Schema = defineSchema(
  `${META_V1}.LabelSelectorRequirement`,
  object(
    {
      key: {
        ...str("The label key the requirement applies to."),
        "x-kubernetes-patch-merge-key": "key",
        "x-kubernetes-patch-strategy": "merge",
      },
      operator: str("How the key relates to the values: In, NotIn, Exists or DoesNotExist."),
      values: array(
        { type: "string" },
        "The values for In and NotIn (non-empty); empty for Exists and DoesNotExist.",
        { listType: "atomic" },
      ),
    },
    "One requirement of a label selector: a key, an operator and values.",
    ["key", "operator"],
  ),
);

export const labelSelectorSchema: Schema = defineSchema(`${META_V1}.LabelSelector`, {
  ...object(
    {
      matchExpressions: array(
        refSchema(labelSelectorRequirementSchema),
        "Requirements that must all hold.",
        { listType: "atomic" },
      ),
      matchLabels: stringMap("Labels that must all be present with these values."),
    },
    "A label query: matchLabels and matchExpressions together (AND). An empty selector matches every object; a null one matches none.",
  ),
  "x-kubernetes-map-type": "atomic",
});

export const metaConditionSchema: Schema = defineSchema(
  `${META_V1}.Condition`,
  object(
    {
      lastTransitionTime: time("When the condition last changed status."),
      message: str("A human-readable account of the transition."),
      observedGeneration: int64("The metadata.generation the condition was set for."),
      reason: str("A CamelCase machine-readable reason for the last transition."),
      status: str("True, False or Unknown."),
      type: str("The condition's type, in CamelCase or as foo.example.com/CamelCase."),
    },
    "One aspect of an object's current state.",
    ["lastTransitionTime", "message", "reason", "status", "type"],
  ),
);
