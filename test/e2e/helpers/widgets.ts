/**
 * A resource type for the kubectl tests, added to the registry the way the server
 * defines its own types (not through a CustomResourceDefinition, so no CRD loop
 * manages it): a spec, and a status written through `/status` by a (simulated)
 * controller, with conditions carrying `observedGeneration`. No built-in type has
 * such conditions, and `kubectl wait --for=condition` needs them.
 */
import { objectMetaProperty } from "../../../src/registry/builtin/meta-schemas.ts";
import {
  createBuiltinRegistry,
  type Registry,
  type ResourceDefinition,
} from "../../../src/registry/index.ts";

export const WIDGET_GROUP = "e2e.setpoint.dev";
export const WIDGET_VERSION = "v1";
export const WIDGET_API_VERSION = `${WIDGET_GROUP}/${WIDGET_VERSION}`;

const condition = {
  type: "object" as const,
  required: ["type", "status"],
  properties: {
    type: { type: "string" as const },
    status: { type: "string" as const, enum: ["True", "False", "Unknown"] },
    observedGeneration: { type: "integer" as const },
    reason: { type: "string" as const },
    message: { type: "string" as const },
    lastTransitionTime: { type: "string" as const, format: "date-time" },
  },
};

/** The Widget resource definition (namespaced, status subresource, printer columns). */
export function widgetDefinition(): ResourceDefinition {
  return {
    group: WIDGET_GROUP,
    names: {
      plural: "widgets",
      singular: "widget",
      kind: "Widget",
      listKind: "WidgetList",
      shortNames: ["wdg"],
      categories: [],
    },
    namespaced: true,
    custom: false,
    strategicMergePatch: true,
    strategy: { allowUnconditionalUpdate: false, tracksGeneration: true },
    versions: [
      {
        name: WIDGET_VERSION,
        served: true,
        storage: true,
        statusSubresource: true,
        printerColumns: [
          { name: "Size", type: "integer", jsonPath: ".spec.size", priority: 0 },
          { name: "Phase", type: "string", jsonPath: ".status.phase", priority: 1 },
        ],
        schema: {
          type: "object",
          properties: {
            apiVersion: { type: "string" },
            kind: { type: "string" },
            metadata: objectMetaProperty(),
            spec: {
              type: "object",
              description: "What the widget should be.",
              properties: { size: { type: "integer", description: "How big the widget is." } },
            },
            status: {
              type: "object",
              properties: {
                phase: { type: "string" },
                observedGeneration: { type: "integer" },
                conditions: {
                  type: "array",
                  "x-kubernetes-list-type": "map",
                  "x-kubernetes-list-map-keys": ["type"],
                  items: condition,
                },
              },
            },
          },
        },
      },
    ],
  };
}

/** The built-in types plus Widgets. */
export function registryWithWidgets(): Registry {
  const registry = createBuiltinRegistry();
  registry.add(widgetDefinition());
  return registry;
}
