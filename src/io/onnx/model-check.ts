/**
 * The shape of an OnnxModel object handed to encodeModel or runModel from JavaScript, checked
 * before either walks it: a missing graph or a node whose inputs are not an array is an
 * INVALID_DATA error naming the path ("model.graph.nodes[2].inputs"), not a TypeError from inside.
 * Values are checked by the functions themselves (attribute types, tensor contents).
 */
import { describe, expectArray, expectObject } from "../../args.js";
import { TensorcastError } from "../../errors.js";
import { expectTensor } from "../../tensor.js";
import type { OnnxGraph, OnnxModel, OnnxNode } from "./model.js";

function expectString(x: unknown, what: string): void {
  if (typeof x !== "string") throw new TensorcastError("INVALID_DATA", `${what} must be a string, got ${describe(x)}`);
}

function expectStrings(x: unknown, what: string): void {
  expectArray(x, what);
  for (let i = 0; i < x.length; i++) expectString(x[i], `${what}[${i}]`);
}

/** A node as runModel and encodeModel read it: name, opType, domain, inputs, outputs, attributes. */
export function checkNode(node: unknown, what: string): asserts node is OnnxNode {
  expectObject(node, what);
  expectString(node.opType, `${what}.opType`);
  for (const key of ["name", "domain"]) if (node[key] !== undefined) expectString(node[key], `${what}.${key}`);
  expectStrings(node.inputs, `${what}.inputs`);
  expectStrings(node.outputs, `${what}.outputs`);
  expectArray(node.attributes, `${what}.attributes`);
  node.attributes.forEach((a, i) => {
    expectObject(a, `${what}.attributes[${i}]`);
    expectString(a.name, `${what}.attributes[${i}].name`);
    expectString(a.type, `${what}.attributes[${i}].type`);
  });
}

function checkGraph(g: unknown, what: string): asserts g is OnnxGraph {
  expectObject(g, what);
  if (g.name !== undefined) expectString(g.name, `${what}.name`);
  expectArray(g.nodes, `${what}.nodes`);
  g.nodes.forEach((n, i) => checkNode(n, `${what}.nodes[${i}]`));
  expectArray(g.initializers, `${what}.initializers`);
  g.initializers.forEach((init, i) => {
    expectObject(init, `${what}.initializers[${i}]`);
    expectString(init.name, `${what}.initializers[${i}].name`);
    expectTensor(init.tensor, `${what}.initializers[${i}].tensor`);
  });
  for (const list of ["inputs", "outputs"] as const) {
    const values = g[list];
    expectArray(values, `${what}.${list}`);
    values.forEach((v, i) => {
      expectObject(v, `${what}.${list}[${i}]`);
      expectString(v.name, `${what}.${list}[${i}].name`);
    });
  }
}

/** `model` has the fields of an OnnxModel, recursively as far as the walkers go. */
export function checkModel(model: unknown, what = "model"): asserts model is OnnxModel {
  expectObject(model, what);
  expectArray(model.opsetImports, `${what}.opsetImports`);
  model.opsetImports.forEach((o, i) => {
    expectObject(o, `${what}.opsetImports[${i}]`);
    if (o.domain !== undefined) expectString(o.domain, `${what}.opsetImports[${i}].domain`);
    if (typeof o.version !== "number") throw new TensorcastError("INVALID_DATA", `${what}.opsetImports[${i}].version must be a number, got ${describe(o.version)}`);
  });
  checkGraph(model.graph, `${what}.graph`);
}
