/**
 * Name acceptance: a CRD is served only if its plural, singular, short names,
 * kind and list kind clash with no other resource served in the same group, as
 * Kubernetes' naming controller decides (the NamesAccepted condition).
 */
import type { KubeObject } from "@setpoint/api";
import type { Registry } from "../registry.ts";
import { crdSpec } from "./types.ts";

/** The outcome of checking a CRD's names; `reason`/`message` say which name clashes. */
export interface NamesCheck {
  accepted: boolean;
  reason?: string;
  message?: string;
}

/**
 * Checks `crd`'s names against every other resource of its group in `reg` (the
 * CRD's own served definition, same plural, is not a clash). When several names
 * clash, the reason is the last in Kubernetes' order: plural, singular, short
 * names, kind, list kind.
 */
export function checkNames(reg: Registry, crd: KubeObject): NamesCheck {
  const spec = crdSpec(crd);
  const group = spec.group ?? "";
  const names = spec.names ?? {};
  const resources = new Set<string>();
  const kinds = new Set<string>();
  for (const def of reg.all()) {
    if (def.group !== group || def.names.plural === names.plural) continue;
    resources.add(def.names.plural);
    resources.add(def.names.singular);
    for (const s of def.names.shortNames) resources.add(s);
    kinds.add(def.names.kind);
    kinds.add(def.names.listKind);
  }
  let result: NamesCheck = { accepted: true, reason: "NoConflicts", message: "no conflicts found" };
  const clash = (reason: string, name: string) => {
    result = { accepted: false, reason, message: `"${name}" is already in use` };
  };
  if (names.plural && resources.has(names.plural)) clash("PluralConflict", names.plural);
  if (names.singular && resources.has(names.singular)) clash("SingularConflict", names.singular);
  const shortClashes = (names.shortNames ?? []).filter((s) => resources.has(s));
  if (shortClashes.length > 0) {
    result = {
      accepted: false,
      reason: "ShortNamesConflict",
      message:
        shortClashes.length === 1
          ? `"${shortClashes[0]}" is already in use`
          : `[${shortClashes.map((s) => `"${s}" is already in use`).join(", ")}]`,
    };
  }
  if (names.kind && kinds.has(names.kind)) clash("KindConflict", names.kind);
  if (names.listKind && kinds.has(names.listKind)) clash("ListKindConflict", names.listKind);
  return result;
}
