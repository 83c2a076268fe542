// The README extractor of scripts/test-readme.sh:
//
//   node scripts/readme/extract.mjs README.md OUTDIR
//
// Every fenced code block of README.md must carry a name in its info string,
// ```sh readme=demo ```, or say why it is not run, ```sh readme-skip="why" ```.
// Writes each named block's text to OUTDIR/<name> and prints one line per block,
// `name <TAB> lang <TAB> line of the block's first text line <TAB> skip reason`.
// Fails, naming README lines, on an untagged block, a malformed or duplicate name, an
// empty skip reason or an unclosed fence.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const [readme, outDir] = process.argv.slice(2);
if (!readme || !outDir) {
  console.error("usage: node extract.mjs README.md OUTDIR");
  process.exit(2);
}
const lines = readFileSync(readme, "utf8").split("\n");
mkdirSync(outDir, { recursive: true });

const errors = [];
const seen = new Map();
const rows = [];
for (let i = 0; i < lines.length; i++) {
  const open = /^ {0,3}(`{3,}|~{3,})(.*)$/.exec(lines[i]);
  if (!open) continue;
  const fence = open[1];
  const info = open[2].trim();
  const start = i + 1;
  let end = start;
  const closing = new RegExp(`^ {0,3}${fence[0] === "`" ? "`" : "~"}{${fence.length},}\\s*$`);
  while (end < lines.length && !closing.test(lines[end])) end++;
  if (end === lines.length) {
    errors.push(`${readme}:${start}: the code block opened here is never closed`);
    break;
  }
  const text = lines.slice(start, end).join("\n") + "\n";
  i = end;

  const lang = info.split(/\s+/)[0] || "(none)";
  const name = /(?:^|\s)readme=(\S*)/.exec(info)?.[1];
  const skip = /(?:^|\s)readme-skip="([^"]*)"/.exec(info)?.[1];
  const where = `${readme}:${start}`;
  if (name === undefined && skip === undefined) {
    errors.push(
      `${where}: a \`\`\`${lang} block without readme=<name>: name it and teach ` +
        `scripts/test-readme.sh to compile or run it, or mark it readme-skip="<why>"`,
    );
    continue;
  }
  if (skip !== undefined && !skip.trim()) {
    errors.push(`${where}: readme-skip needs a reason`);
    continue;
  }
  const id = name ?? `skipped-${start}`;
  if (!/^[a-z0-9][a-z0-9-]*$/.test(id)) {
    errors.push(`${where}: readme=${id}: names are lowercase letters, digits and dashes`);
    continue;
  }
  if (seen.has(id)) {
    errors.push(`${where}: readme=${id} is also the name of the block at ${readme}:${seen.get(id)}`);
    continue;
  }
  seen.set(id, start);
  writeFileSync(join(outDir, id), text);
  rows.push([id, lang, start + 1, skip ?? ""].join("\t"));
}
if (errors.length) {
  for (const e of errors) console.error(e);
  process.exit(1);
}
console.log(rows.join("\n"));
