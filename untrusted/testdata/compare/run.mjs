// Runs published prompt-injection detectors over airlock's scanner
// evaluation set (../scaneval/eval.jsonl) and prints, per category and
// split, the share of documents each one flags: recall for attack
// categories, false flags for clean ones. "all" is train and held out; the
// blind split, written without sight of airlock's rules, has its own column. See BENCHMARKS.md, "Injection
// scanner".
//
//   cd untrusted/testdata/compare && npm ci && node run.mjs
import { readFileSync } from "node:fs";
import vard from "@andersmyrmel/vard";
import { checkInjection } from "llm_guardrail";

const docs = readFileSync(new URL("../scaneval/eval.jsonl", import.meta.url), "utf8")
  .split("\n")
  .filter((l) => l.trim() !== "")
  .map((l) => JSON.parse(l));

// vard's default preset (moderate, threshold 0.7), with its 10,000
// character input limit raised so that length alone never flags.
const vardModerate = vard.moderate().maxLength(1_000_000);

const detectors = {
  "vard 1.2.0 (moderate)": async (text) => !vardModerate.safeParse(text).safe,
  "llm_guardrail 2.1.2 (checkInjection)": async (text) => (await checkInjection(text)).detected,
};

for (const [name, flags] of Object.entries(detectors)) {
  const rows = new Map();
  for (const d of docs) {
    const key = (d.attack ? "attack/" : "clean/") + d.category;
    if (!rows.has(key)) rows.set(key, { attack: d.attack, n: [0, 0, 0], flagged: [0, 0, 0] });
    const r = rows.get(key);
    const split = { holdout: 1, blind: 2 }[d.split] ?? 0;
    r.n[split]++;
    if (await flags(d.text)) r.flagged[split]++;
  }
  const pct = (f, n) => (n === 0 ? "-" : ((100 * f) / n).toFixed(1) + "%");
  console.log(`\n${name}\n`);
  console.log("| category | measure | train n | train | held-out n | held-out | all | blind n | blind |");
  console.log("|---|---|--:|--:|--:|--:|--:|--:|--:|");
  for (const key of [...rows.keys()].sort()) {
    const r = rows.get(key);
    console.log(
      `| ${key} | ${r.attack ? "recall" : "false flags"} | ${r.n[0]} | ${pct(r.flagged[0], r.n[0])} | ${r.n[1]} | ${pct(r.flagged[1], r.n[1])} | ${pct(r.flagged[0] + r.flagged[1], r.n[0] + r.n[1])} | ${r.n[2]} | ${pct(r.flagged[2], r.n[2])} |`,
    );
  }
}
