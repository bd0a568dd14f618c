/**
 * The errors patch application raises, with the codes Kubernetes answers with:
 * 400 for a patch document that cannot be read at all, 422 for one that is well
 * formed but does not apply to the object.
 */
import { CauseType, errors, failure, type StatusError } from "../status.ts";

/** Kubernetes' fixed message for a patch that does not apply (422 Invalid). */
export const PATCH_NOT_APPLICABLE_MESSAGE =
  "the server rejected our request due to an error in our request";

/**
 * 422 Invalid for a patch that does not apply (a failed `test`, a missing path).
 * The message starts with Kubernetes' fixed sentence and adds the reason, which is
 * also the one cause (field `patch`), so kubectl shows it.
 */
export function patchNotApplicable(detail: string): StatusError {
  return failure(422, "Invalid", `${PATCH_NOT_APPLICABLE_MESSAGE}: ${detail}`, {
    causes: [{ reason: CauseType.Invalid, message: detail, field: "patch" }],
  });
}

/** 400 Bad Request for a patch document that is malformed. */
export function patchMalformed(detail: string): StatusError {
  return errors.badRequest(detail);
}
