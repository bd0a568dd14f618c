/**
 * CEL environments: the Kubernetes library, and one environment per pair of
 * declared types of `self` and `oldSelf`, whose evaluator is metered; the CEL
 * type of a schema node.
 */
import type { Environment } from "@marcbachmann/cel-js";
import type { Schema } from "@setpoint/api";
import { isObject } from "../paths.ts";
import { kubernetesEnvironment } from "./library.ts";
import { tick } from "./meter.ts";

interface Evaluator {
  run(ast: unknown, ctx: unknown): unknown;
}

let base: Environment | undefined;
let probed: Evaluator | undefined;
const environments = new Map<string, Environment>();

export function baseEnvironment(): Environment {
  if (!base) {
    base = kubernetesEnvironment();
    base.registerFunction("__setpointMeterProbe(): bool", function (this: Evaluator) {
      probed = this;
      return true;
    });
  }
  return base;
}

/**
 * An environment with `self` and `oldSelf` declared. Its evaluator is metered:
 * every expression node it evaluates counts one against the running meter.
 */
export function environmentFor(selfType: string, oldType: string): Environment {
  return meteredEnvironment({ self: selfType, oldSelf: oldType });
}

/**
 * An environment with `variables` (name → CEL type) declared, whose evaluator is
 * metered: every expression node it evaluates counts one against the running meter.
 */
export function meteredEnvironment(variables: Record<string, string>): Environment {
  const key = Object.entries(variables)
    .map(([name, type]) => `${name}:${type}`)
    .join("|");
  const hit = environments.get(key);
  if (hit) return hit;
  let env = baseEnvironment().clone();
  for (const [name, type] of Object.entries(variables)) env = env.registerVariable(name, type);
  probed = undefined;
  env.evaluate("__setpointMeterProbe()", {});
  const ev = probed as Evaluator | undefined;
  if (!ev || typeof ev.run !== "function") throw new Error("CEL evaluator cannot be metered");
  const run = ev.run;
  ev.run = function metered(this: Evaluator, ast: unknown, ctx: unknown) {
    tick();
    return run.call(this, ast, ctx);
  };
  environments.set(key, env);
  return env;
}

/** The CEL type a schema node's values have. */
export function celType(s: Schema | undefined): string {
  if (!s || s["x-kubernetes-int-or-string"] || s["x-kubernetes-embedded-resource"]) return "dyn";
  switch (s.type) {
    case "string":
      if (s.format === "byte") return "bytes";
      if (s.format === "duration") return "google.protobuf.Duration";
      if (s.format === "date" || s.format === "date-time") return "google.protobuf.Timestamp";
      return "string";
    case "integer":
      return "int";
    case "number":
      return "double";
    case "boolean":
      return "bool";
    case "array":
      return s.items && !s.items.nullable ? `list<${celType(s.items)}>` : "list<dyn>";
    case "object":
      if (isObject(s.additionalProperties) && !s.properties) {
        const v = s.additionalProperties as Schema;
        return `map<string, ${v.nullable ? "dyn" : celType(v)}>`;
      }
      return s.properties ? "map<string, dyn>" : "dyn";
    default:
      return "dyn";
  }
}
