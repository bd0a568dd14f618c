/**
 * The resolution of a resource name a person types (`widget`, `widgets`, `wd`,
 * `Widget`, `widgets.example.com`) to one of the resources the server serves
 * (the runtime's discovery), as kubectl resolves resource names.
 */
import { groupResource, type ServedResource } from "../../runtime/index.ts";
import { UsageError } from "../storage.ts";

export type { ServedResource } from "../../runtime/index.ts";

/**
 * Resolves a typed resource name. `text` is a kind, plural, singular or short
 * name, case-insensitive, optionally followed by `.<group>` (e.g.
 * `widgets.example.com`, `Widget.example.com`). Several matches in different
 * groups are ambiguous unless exactly one is in the core group (kubectl's
 * preference). Throws UsageError when nothing or more than one matches.
 */
export function resolveResource(resources: ServedResource[], text: string): ServedResource {
  const wanted = text.toLowerCase();
  const names = (r: ServedResource) => [
    r.kind.toLowerCase(),
    r.plural,
    r.singular,
    ...r.shortNames.map((s) => s.toLowerCase()),
  ];
  const matches = resources.filter((r) => {
    const ns = names(r);
    if (ns.includes(wanted)) return true;
    if (r.group === "") return false;
    // "<name>.<group>" and "<name>.<version>.<group>"
    return ns.some(
      (n) => wanted === `${n}.${r.group}` || wanted === `${n}.${r.version}.${r.group}`,
    );
  });
  if (matches.length === 1) return matches[0];
  if (matches.length === 0) {
    throw new UsageError(
      `the server does not serve a resource named ${JSON.stringify(text)} (try a kind, plural or short name, e.g. "configmaps" or "widgets.example.com")`,
    );
  }
  const core = matches.filter((r) => r.group === "");
  if (core.length === 1) return core[0];
  throw new UsageError(
    `${JSON.stringify(text)} is ambiguous: ${matches.map(groupResource).join(", ")}; name the group, e.g. ${groupResource(matches[0])}`,
  );
}
