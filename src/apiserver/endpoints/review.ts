/**
 * POST to a review type (a definition with `review`, e.g. SelfSubjectAccessReview):
 * the body is decoded, field-validated and validated as for any create, then
 * answered with 201 and the review's result. Nothing is stored, nothing is
 * watched; dryRun changes nothing since nothing would be written anyway.
 */
import { errors } from "@setpoint/api";
import type { ResourceDefinition } from "../../registry/types.ts";
import type { RequestScope } from "./context.ts";
import { parseDryRun, parseFieldValidation, readObject } from "./request-body.ts";
import { respondObject } from "./respond.ts";

/** Handles POST on a review type's collection. */
export async function createReview(
  scope: RequestScope,
  review: NonNullable<ResourceDefinition["review"]>,
): Promise<void> {
  const mode = parseFieldValidation(scope, "CreateOptions");
  parseDryRun(scope, "CreateOptions");
  const body = await readObject(scope, mode);
  const causes = scope.def.strategy.validate?.(body, undefined) ?? [];
  if (causes.length > 0) {
    throw errors.invalid(scope.def.names.kind, body.metadata.name ?? "", causes, scope.def.group);
  }
  respondObject(
    scope,
    201,
    review(body, scope.user, new Date(), {
      authorizer: scope.ctx.authorizer,
      ...(scope.ctx.reviewToken ? { reviewToken: scope.ctx.reviewToken } : {}),
    }),
  );
}
