// A controller in a project of its own: it depends on @setpoint/runtime and
// @setpoint/api by name, as a user's project does (test/packaging copies this file).
// #region imports
import type { KubeObject } from "@setpoint/api";
import {
  type BuilderOptions,
  type Controller,
  createOrUpdate,
  isNotFound,
  kind,
  type Manager,
  setControllerReference,
} from "@setpoint/runtime";
// #endregion

export interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

export const ConfigMapKind = kind<ConfigMap>("v1", "ConfigMap");

/** The label that asks for a copy. */
export const COPY_LABEL = "example.com/copy";

/** Keeps a "NAME-copy" ConfigMap, owned by its source, beside every ConfigMap labelled for it. */
export function addCopier(mgr: Manager, opts: BuilderOptions = {}): Controller {
  return mgr
    .controller("copier")
    .for(ConfigMapKind)
    .owns(ConfigMapKind)
    .withOptions(opts)
    .complete(async (req, ctx) => {
      let source: ConfigMap;
      try {
        source = await ctx.reader.get(ConfigMapKind, req.name, req.namespace);
      } catch (e) {
        if (isNotFound(e)) return;
        throw e;
      }
      if (source.metadata.labels?.[COPY_LABEL] !== "yes") return;
      const copy: ConfigMap = {
        ...ConfigMapKind,
        metadata: { name: `${req.name}-copy`, namespace: source.metadata.namespace },
      };
      await createOrUpdate(
        ctx.client,
        copy,
        (cm) => {
          cm.data = { ...source.data };
          setControllerReference(source, cm);
        },
        { reader: ctx.reader },
      );
    });
}
