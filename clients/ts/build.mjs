// Builds with the pinned esbuild: dist/bot.mjs and dist/node.mjs (Node, packages from node_modules) and the web
// table (web/ -> ../../server/web/, served by the referee at / on its HTTP port). Both outputs are committed;
// `node build.mjs --check` generates (buf generate, protoc-gen-es) and builds into temporary directories and fails
// when a committed file of src/gen, dist or server/web is missing or stale.
import * as esbuild from "esbuild";
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, existsSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";

const check = process.argv.includes("--check");
const here = new URL(".", import.meta.url).pathname;
const targets = { dist: join(here, "dist"), web: join(here, "..", "..", "server", "web") };
const out = check ? { dist: mkdtempSync(join(tmpdir(), "ts-dist-")), web: mkdtempSync(join(tmpdir(), "ts-web-")) } : targets;

const common = { bundle: true, format: "esm", logLevel: "warning", legalComments: "none", charset: "utf8" };
await esbuild.build({
  ...common,
  entryPoints: { bot: join(here, "src/bot.ts"), node: join(here, "src/node.ts") },
  outdir: out.dist,
  outExtension: { ".js": ".mjs" },
  platform: "node",
  target: "node20",
  packages: "external",
});
await esbuild.build({
  ...common,
  entryPoints: { app: join(here, "web/app.ts") },
  outdir: out.web,
  platform: "browser",
  target: "es2022",
  minify: true,
});
for (const f of ["index.html", "table.css"]) cpSync(join(here, "web", f), join(out.web, f));

if (check) {
  let stale = 0;
  const gen = mkdtempSync(join(tmpdir(), "ts-gen-"));
  const buf = spawnSync(join(here, "node_modules/.bin/buf"),
    ["generate", join(here, "../../proto"), "--template", join(here, "buf.gen.yaml"), "--output", gen],
    { cwd: here, stdio: "inherit" });
  if (buf.status !== 0) process.exit(1);
  const walk = (dir) => readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)).map((f) => join(e.name, f)) : [e.name]);
  const fresh = walk(join(gen, "src/gen"));
  for (const f of new Set([...fresh, ...walk(join(here, "src/gen"))])) {
    const committed = join(here, "src/gen", f);
    const made = join(gen, "src/gen", f);
    if (!existsSync(made)) {
      console.error(`web-check: ${committed} has no .proto source any more`);
      stale += 1;
    } else if (!existsSync(committed) || !readFileSync(committed).equals(readFileSync(made))) {
      console.error(`web-check: ${committed} is missing or stale`);
      stale += 1;
    }
  }
  rmSync(gen, { recursive: true, force: true });
  for (const key of ["dist", "web"]) {
    for (const f of readdirSync(out[key])) {
      const committed = join(targets[key], f);
      if (!existsSync(committed) || !readFileSync(committed).equals(readFileSync(join(out[key], f)))) {
        console.error(`web-check: ${committed} is missing or stale`);
        stale += 1;
      }
    }
    rmSync(out[key], { recursive: true, force: true });
  }
  if (stale) {
    console.error("web-check: FAILED, run 'make web' and commit clients/ts/src/gen, clients/ts/dist and server/web");
    process.exit(1);
  }
  console.log("web-check: clients/ts/src/gen, clients/ts/dist and server/web are up to date");
}
