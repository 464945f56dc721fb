#!/usr/bin/env node
// Validates every YAML (or JSON) document in the given files against the Kubernetes schemas
// (kubernetes-models) and the KEDA CRD schemas (@kubernetes-models/keda). Used by
// tests/render_cli_test.cc on the manifests `gpuscale render` prints.
//
//   node validate.mjs FILE...      exit 0: every document valid; 1: some invalid; 2: usage
//
// A v1 List is checked item by item. A document whose apiVersion/kind is not in the table below is an error, so a renderer
// change that emits a new kind cannot slip through unvalidated.
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { Service } from "kubernetes-models/v1/Service";
import { ScaledObject } from "@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject";

const kModels = new Map([
  ["apps/v1/Deployment", Deployment],
  ["v1/Service", Service],
  ["keda.sh/v1alpha1/ScaledObject", ScaledObject],
]);

// Returns a list of problems for one parsed document ([] when valid).
function checkDocument(object) {
  if (object === null || typeof object !== "object" || Array.isArray(object)) {
    return ["not a Kubernetes object (expected a mapping with apiVersion and kind)"];
  }
  const key = `${object.apiVersion}/${object.kind}`;
  if (key === "v1/List") {  // `gpuscale render -o json` prints its objects as a v1 List
    if (!Array.isArray(object.items)) return ["v1/List without an items array"];
    return object.items.flatMap((item, i) => checkDocument(item).map((p) => `items[${i}]: ${p}`));
  }
  const Model = kModels.get(key);
  if (!Model) {
    return [`unsupported apiVersion/kind '${key}' (known: ${[...kModels.keys()].join(", ")})`];
  }
  try {
    new Model(object).validate();
    return [];
  } catch (e) {
    return [`${key} ${object.metadata?.name ?? "<unnamed>"}: ${e.message}`];
  }
}

function checkFile(path) {
  let text;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    return { documents: 0, problems: [`${path}: cannot read: ${e.message}`] };
  }
  const problems = [];
  let documents = 0;
  parseAllDocuments(text).forEach((doc, index) => {
    const where = `${path} document ${index + 1}`;
    if (doc.errors.length > 0) {
      problems.push(`${where}: YAML error: ${doc.errors[0].message}`);
      return;
    }
    const object = doc.toJS();
    if (object === null || object === undefined) return;  // empty document (trailing ---)
    documents += 1;
    for (const p of checkDocument(object)) problems.push(`${where}: ${p}`);
  });
  if (documents === 0 && problems.length === 0) problems.push(`${path}: no documents`);
  return { documents, problems };
}

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node validate.mjs FILE...");
  process.exit(2);
}
let failed = false;
for (const file of files) {
  const { documents, problems } = checkFile(file);
  for (const p of problems) console.error(`invalid: ${p}`);
  if (problems.length > 0) failed = true;
  else console.log(`ok: ${file} (${documents} documents)`);
}
process.exit(failed ? 1 : 0);
