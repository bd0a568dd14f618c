/**
 * CustomResourceDefinitions at run time (establishing.ts): the controller that
 * watches CRDs, sets their NamesAccepted and Established conditions, serves their
 * types, and deletes their objects before a CRD itself goes. The CRD type and the
 * conversion of a CRD into a served definition are the registry's (src/registry/crd).
 */
export * from "./establishing.ts";
