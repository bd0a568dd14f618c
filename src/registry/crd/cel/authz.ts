/**
 * Kubernetes' CEL authorizer library, which admission policies' expressions get as
 * the variable `authorizer` (type `kubernetes.authorization.Authorizer`):
 *
 * - `authorizer.group(G).resource(R)` then optionally `.subresource(S)`,
 *   `.namespace(NS)`, `.name(N)`, then `.check(VERB)`: may the requester do that?
 * - `authorizer.path(P).check(VERB)`: a non-resource URL;
 * - `authorizer.serviceAccount(NS, NAME)`: the same checks, asked for that
 *   ServiceAccount (its user and groups) instead of the requester;
 * - `authorizer.requestResource`: the check of the request's own group, resource,
 *   subresource, namespace and name, e.g. `authorizer.requestResource.check('delete')`;
 * - a check's Decision: `allowed()`, `reason()`, `errored()`, `error()`.
 *
 * Each check asks `decide`, the server's authorizer chain (Node, then RBAC).
 */
import type { Environment } from "@marcbachmann/cel-js";
import type { AccessAttributes, AccessUser } from "../../builtin/rbac/index.ts";

/** The server's answer to one check. */
export type Decide = (
  user: AccessUser,
  attrs: AccessAttributes,
) => { allowed: boolean; reason: string };

const T = "kubernetes.authorization";

/** `authorizer`: checks asked as `user`. */
export class CelAuthorizer {
  /** The request's own resource, as a ResourceCheck (undefined outside a resource request). */
  readonly requestResource: ResourceCheck | undefined;
  constructor(
    readonly decide: Decide,
    readonly user: AccessUser,
    request?: {
      group: string;
      resource: string;
      subresource?: string;
      namespace?: string;
      name?: string;
    },
  ) {
    this.requestResource = request
      ? new ResourceCheck(
          this,
          request.group,
          request.resource,
          request.subresource ?? "",
          request.namespace ?? "",
          request.name ?? "",
        )
      : undefined;
  }
}

export class PathCheck {
  constructor(
    readonly authorizer: CelAuthorizer,
    readonly path: string,
  ) {}
}

export class GroupCheck {
  constructor(
    readonly authorizer: CelAuthorizer,
    readonly group: string,
  ) {}
}

export class ResourceCheck {
  constructor(
    readonly authorizer: CelAuthorizer,
    readonly group: string,
    readonly resource: string,
    readonly subresource = "",
    readonly namespace = "",
    readonly name = "",
  ) {}
  with(part: "subresource" | "namespace" | "name", value: string): ResourceCheck {
    const next = { ...this, [part]: value };
    return new ResourceCheck(
      this.authorizer,
      next.group,
      next.resource,
      next.subresource,
      next.namespace,
      next.name,
    );
  }
}

export class Decision {
  constructor(
    readonly allowed: boolean,
    readonly reason: string,
    readonly error = "",
  ) {}
}

function decide(a: CelAuthorizer, verb: string, attrs: Omit<AccessAttributes, "verb">): Decision {
  try {
    const d = a.decide(a.user, { verb, ...attrs });
    return new Decision(d.allowed, d.reason);
  } catch (err) {
    return new Decision(false, "", err instanceof Error ? err.message : String(err));
  }
}

/** Registers the library's types and functions in `env`. */
export function registerAuthzLibrary(env: Environment): void {
  env.registerType(`${T}.Decision`, Decision);
  env.registerType(`${T}.PathCheck`, PathCheck);
  env.registerType(`${T}.GroupCheck`, GroupCheck);
  env.registerType(`${T}.ResourceCheck`, ResourceCheck);
  env.registerType(`${T}.Authorizer`, {
    ctor: CelAuthorizer,
    fields: { requestResource: `${T}.ResourceCheck` },
  });
  env.registerFunction(
    `${T}.Authorizer.path(string): ${T}.PathCheck`,
    (a: CelAuthorizer, path: string) => new PathCheck(a, path),
  );
  env.registerFunction(
    `${T}.Authorizer.group(string): ${T}.GroupCheck`,
    (a: CelAuthorizer, group: string) => new GroupCheck(a, group),
  );
  env.registerFunction(
    `${T}.Authorizer.serviceAccount(string, string): ${T}.Authorizer`,
    (a: CelAuthorizer, namespace: string, name: string) =>
      new CelAuthorizer(a.decide, {
        name: `system:serviceaccount:${namespace}:${name}`,
        groups: ["system:serviceaccounts", `system:serviceaccounts:${namespace}`],
      }),
  );
  env.registerFunction(
    `${T}.GroupCheck.resource(string): ${T}.ResourceCheck`,
    (g: GroupCheck, resource: string) => new ResourceCheck(g.authorizer, g.group, resource),
  );
  for (const part of ["subresource", "namespace", "name"] as const) {
    env.registerFunction(
      `${T}.ResourceCheck.${part}(string): ${T}.ResourceCheck`,
      (r: ResourceCheck, value: string) => r.with(part, value),
    );
  }
  env.registerFunction(
    `${T}.ResourceCheck.check(string): ${T}.Decision`,
    (r: ResourceCheck, verb: string) =>
      decide(r.authorizer, verb, {
        resource: {
          group: r.group,
          resource: r.resource,
          ...(r.subresource ? { subresource: r.subresource } : {}),
          ...(r.namespace ? { namespace: r.namespace } : {}),
          ...(r.name ? { name: r.name } : {}),
        },
      }),
  );
  env.registerFunction(
    `${T}.PathCheck.check(string): ${T}.Decision`,
    (p: PathCheck, verb: string) => decide(p.authorizer, verb, { path: p.path }),
  );
  env.registerFunction(`${T}.Decision.allowed(): bool`, (d: Decision) => d.allowed);
  env.registerFunction(`${T}.Decision.reason(): string`, (d: Decision) => d.reason);
  env.registerFunction(`${T}.Decision.errored(): bool`, (d: Decision) => d.error !== "");
  env.registerFunction(`${T}.Decision.error(): string`, (d: Decision) => d.error);
}

/** The CEL type of the `authorizer` variable. */
export const AUTHORIZER_TYPE = `${T}.Authorizer`;
