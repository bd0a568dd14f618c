/** What compiling a schema's CEL rules produces, and the parsed expression nodes it reads. */
import type { ParseResult } from "@marcbachmann/cel-js";
import type { Schema, StatusCause, ValidationRule } from "@setpoint/api";

/** A compiled rule of a schema node. */
export interface CompiledRule {
  rule: ValidationRule;
  program: ParseResult;
  usesOldSelf: boolean;
  optionalOldSelf: boolean;
  messageProgram?: ParseResult;
  /** Normalized `fieldPath` (e.g. "replicas" or "spec.replicas"), if given. */
  fieldPath?: string;
  /** Estimated cost of one evaluation. */
  cost: number;
}

/** The rules of a schema node and of the nodes below it that have rules. */
export interface CelNode {
  schema: Schema;
  rules: CompiledRule[];
  /** The fields of self the rules read, when that is all they read of it. */
  selfFields?: ReadonlySet<string>;
  /** The same for oldSelf. */
  oldSelfFields?: ReadonlySet<string>;
  /** The declared fields self's view is made of, when known at compile time (picksOf). */
  selfPicks?: CelPick[];
  /** The same for oldSelf. */
  oldSelfPicks?: CelPick[];
  properties?: Map<string, CelNode>;
  additionalProperties?: CelNode;
  items?: CelNode;
}

/** The compiled rules of a whole schema, with the problems found compiling them. */
export interface CelCompilation {
  root?: CelNode;
  /** Causes naming the schema path of each bad rule (e.g. `<base>.x-kubernetes-validations[0].rule`). */
  issues: StatusCause[];
  /** Sum of every rule's estimated cost times how often it can run. */
  totalCost: number;
}

export interface AstNode {
  op: string;
  args: unknown;
  start?: number;
  pos?: number;
}

export function isAst(v: unknown): v is AstNode {
  return typeof v === "object" && v !== null && "op" in v;
}

/** A declared field a node's rules read: its JSON name, its CEL name and its schema. */
export interface CelPick {
  key: string;
  name: string;
  schema: Schema;
}
