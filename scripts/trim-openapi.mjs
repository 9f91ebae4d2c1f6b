// trim-openapi.mjs keeps a subset of a large OpenAPI document: the paths
// whose names match a regular expression, and every component they reach
// through $ref (transitively). It regenerates openapi/testdata/github-trimmed.json
// from the MIT-licensed @octokit/openapi package:
//
//	npm pack @octokit/openapi@23.0.2 && tar xzf octokit-openapi-23.0.2.tgz
//	node scripts/trim-openapi.mjs package/generated/api.github.com.json \
//	  '^/repos/\{owner\}/\{repo\}/(issues|pulls|labels|milestones)|^/user$|^/users/\{username\}$' \
//	  > openapi/testdata/github-trimmed.json
import { readFileSync } from "node:fs";

const [file, pattern] = process.argv.slice(2);
const doc = JSON.parse(readFileSync(file, "utf8"));
const re = new RegExp(pattern);
const out = { ...doc, paths: {}, components: {} };
delete out.webhooks;
delete out["x-webhooks"];
for (const [p, item] of Object.entries(doc.paths)) if (re.test(p)) out.paths[p] = item;

const seen = new Set();
function walk(v) {
  if (Array.isArray(v)) return v.forEach(walk);
  if (v === null || typeof v !== "object") return;
  for (const [k, x] of Object.entries(v)) {
    if (k === "$ref" && typeof x === "string" && x.startsWith("#/components/")) {
      if (seen.has(x)) continue;
      seen.add(x);
      const [, , kind, name] = x.split("/");
      const target = doc.components[kind][name];
      (out.components[kind] ??= {})[name] = target;
      walk(target);
    } else walk(x);
  }
}
walk(out.paths);
if (doc.components.securitySchemes) out.components.securitySchemes = doc.components.securitySchemes;
for (const kind of Object.keys(out.components)) {
  out.components[kind] = Object.fromEntries(Object.entries(out.components[kind]).sort(([a], [b]) => a.localeCompare(b)));
}
process.stdout.write(JSON.stringify(out, null, 1) + "\n");
