// client.mjs drives airlock's MCP server with the official TypeScript SDK,
// the client most agents embed, and checks what a model would see: the
// tool list, with schemas that Ajv (the validator clients check arguments
// with) compiles both as draft-07 and as strict 2020-12, an exact
// calculation with its structured content, refusals that are tool results
// (isError) with a machine-readable code, an unknown tool among them, and
// a file read from the workspace. Then it answers approval questions
// (elicitation) with the 1.x SDK on protocol 2025-11-25 and with the 2.x
// client on 2026-07-28 where the door offers it (stdio): accepted, the
// write happens once; declined, approval_denied and no file.
//
//	node client.mjs stdio BINARY WORKSPACE   spawns BINARY mcp --workspace WORKSPACE
//	node client.mjs http URL WORKSPACE       talks to a running airlock serve at URL,
//	                                         whose --workspace is WORKSPACE
//
// The stdio run starts the server twice: in the default ask mode, where
// write_file answers approval_required, and with --mode read-only, where it
// is denied. The HTTP run checks the mode the server was started in (ask).
// Any mismatch exits 1 with a line saying what was expected and what came.
import { mkdtempSync, writeFileSync, readdirSync, existsSync } from "node:fs";
import { join, basename } from "node:path";
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import * as v2 from "@modelcontextprotocol/client";
import { StdioClientTransport as V2StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import AjvModule from "ajv";
import Ajv2020Module from "ajv/dist/2020.js";

const Ajv = AjvModule.default ?? AjvModule;
const Ajv2020 = Ajv2020Module.default ?? Ajv2020Module;

// newestProtocol is the protocol version on which a server asks through
// input requests (multi-round-trip requests) rather than its own requests.
const newestProtocol = "2026-07-28";

// callTimeoutMs bounds one request, so a hung server fails the run with a
// message instead of stalling until the test's own deadline.
const callTimeoutMs = 20_000;

const usage = "usage: node client.mjs stdio BINARY WORKSPACE | node client.mjs http URL WORKSPACE";

class Mismatch extends Error {}

function fail(what, want, got) {
  throw new Mismatch(`${what}: want ${want}, got ${JSON.stringify(got)}`);
}

// textOf joins the text blocks of a tool result.
function textOf(res) {
  return (res.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("\n");
}

// codeOf is a refused call's error code: structuredContent.code, or, from a
// server that sends no structuredContent, the code in the text, which is
// either a JSON object with a code or airlock's "CODE: message".
function codeOf(res) {
  if (res.structuredContent && typeof res.structuredContent.code === "string") {
    return res.structuredContent.code;
  }
  const text = textOf(res);
  try {
    const v = JSON.parse(text);
    if (v && typeof v.code === "string") return v.code;
  } catch {
    // not JSON: the "CODE: message" form
  }
  const m = /^([a-z_]+):/.exec(text);
  return m ? m[1] : undefined;
}

async function connect(transport, label, client = new Client({ name: "airlock-e2e", version: "1.0.0" })) {
  try {
    await client.connect(transport, { timeout: callTimeoutMs });
  } catch (err) {
    throw new Mismatch(`${label}: connect: ${err.message}`);
  }
  return client;
}

async function call(client, name, args) {
  return client.callTool({ name, arguments: args }, undefined, { timeout: callTimeoutMs });
}

// expectRefusal wants isError and wantCode; a null wantCode takes any code.
async function expectRefusal(client, label, name, args, wantCode) {
  const res = await call(client, name, args);
  if (res.isError !== true) {
    fail(`${label}: ${name} ${JSON.stringify(args)} isError`, "true", res);
  }
  const code = codeOf(res);
  if (wantCode === null ? code === undefined : code !== wantCode) {
    fail(`${label}: ${name} ${JSON.stringify(args)} code`, wantCode ?? "a code", res);
  }
}

async function expectText(client, label, name, args, check, want) {
  const res = await call(client, name, args);
  if (res.isError) {
    fail(`${label}: ${name} ${JSON.stringify(args)}`, `a result, ${want}`, res);
  }
  if (!check(textOf(res))) {
    fail(`${label}: ${name} ${JSON.stringify(args)}`, want, res);
  }
}

// schemaCases are arguments whose validity the schemas shown to clients
// must judge as the gate does: [tool, arguments, valid].
const schemaCases = [
  ["calculate", { expression: "1+1" }, true],
  ["calculate", { expr: "1" }, false],
  ["calculate", { expression: "1".repeat(100_000) }, false],
  ["read_file", { path: "notes.txt", offset: 1, limit: 2 }, true],
  ["read_file", { path: "." }, true],
  ["read_file", { path: "/etc/passwd" }, false],
  ["read_file", { path: "../outside.txt" }, false],
  ["read_file", { path: "a\\b.txt" }, false],
  ["read_file", { path: "" }, false],
  ["read_file", { path: "notes.txt", extra: true }, false],
  ["write_file", { path: "dir/new.txt", content: "x" }, true],
  ["write_file", { path: "..", content: "x" }, false],
  ["web_fetch", { url: "https://example.com/docs?q=1" }, true],
  ["web_fetch", { url: "ftp://example.com/" }, false],
  ["web_fetch", { url: "https://user@example.com/" }, false],
  ["web_fetch", { url: "https://exa mple.com/" }, false],
];

// checkSchemas compiles every tool's inputSchema with Ajv as clients use
// it: the default validator (draft-07) and the 2020-12 one in strict mode,
// and checks a few arguments that each must accept or refuse.
function checkSchemas(label, tools) {
  const validators = [["new Ajv()", new Ajv()], ["new Ajv2020({strict: true})", new Ajv2020({ strict: true })]];
  const compiled = new Map();
  for (const [name, ajv] of validators) {
    for (const t of tools) {
      let validate;
      try {
        validate = ajv.compile(t.inputSchema);
      } catch (err) {
        fail(`${label}: ${name} compiles ${t.name}.inputSchema`, "no error", err.message);
      }
      compiled.set(`${name} ${t.name}`, validate);
    }
    for (const [tool, args, valid] of schemaCases) {
      const validate = compiled.get(`${name} ${tool}`);
      if (validate === undefined) {
        fail(`${label}: tools/list`, `a tool named ${tool}`, tools.map((t) => t.name));
      }
      if (validate(args) !== valid) {
        fail(`${label}: ${name} ${tool} ${JSON.stringify(args).slice(0, 80)}`, valid ? "valid" : "invalid", validate.errors);
      }
    }
  }
}

// checkCommon runs the checks that hold in every mode.
async function checkCommon(client, label, workspace) {
  const { tools } = await client.listTools(undefined, { timeout: callTimeoutMs });
  const names = tools.map((t) => t.name);
  for (const want of ["calculate", "read_file", "write_file"]) {
    if (!names.includes(want)) {
      fail(`${label}: tools/list`, `a tool named ${want}`, names);
    }
  }
  for (const t of tools) {
    if (typeof t.inputSchema !== "object" || t.inputSchema === null || t.inputSchema.type !== "object") {
      fail(`${label}: tools/list ${t.name}.inputSchema`, `an object schema`, t.inputSchema);
    }
  }
  checkSchemas(label, tools);

  await expectText(client, label, "calculate", { expression: "($100 + $250.75) * 20%" },
    (text) => text.trim() === "70.15", "text 70.15");
  // Structured content is an object, never the bare number a client
  // would get by parsing the text as JSON.
  const calc = await call(client, "calculate", { expression: "($100 + $250.75) * 20%" });
  const sc = calc.structuredContent;
  if (!sc || sc.value !== "70.15" || sc.float !== 70.15 || sc.exact !== true) {
    fail(`${label}: calculate structuredContent`, `{"value":"70.15","float":70.15,"exact":true}`, sc);
  }
  await expectRefusal(client, label, "no_such_tool", {}, "unknown_tool");
  await expectRefusal(client, label, "calculate", { expr: "1" }, "invalid_arguments");
  await expectRefusal(client, label, "calculate", { expression: "2 x 3" }, "invalid_syntax");

  // A fresh file, so that a stale server or a cached answer cannot pass.
  const dir = mkdtempSync(join(workspace, "e2e-"));
  const rel = `${basename(dir)}/notes.txt`;
  const token = `airlock-e2e ${process.pid} ${Date.now()}`;
  writeFileSync(join(dir, "notes.txt"), `first line\n${token}\nthird line\n`);
  await expectText(client, label, "read_file", { path: rel },
    (text) => text.includes(token) && text.includes("first line"), `the file's content (${token})`);
  const read = await call(client, "read_file", { path: rel });
  if (typeof read.structuredContent !== "object" || read.structuredContent === null || read.structuredContent.text !== textOf(read)) {
    fail(`${label}: read_file structuredContent`, "an object with the text", read.structuredContent);
  }
  await expectText(client, label, "read_file", { path: rel, offset: 1, limit: 1 },
    (text) => text.includes(token) && !text.includes("first line") && !text.includes("third line"),
    "only the second line");
  // Any code will do for a path outside the workspace, as long as it is
  // a refusal.
  await expectRefusal(client, label, "read_file", { path: "../outside.txt" }, null);
  return dir;
}

// checkWrite asks write_file for a new file and expects wantCode, with
// nothing written.
async function checkWrite(client, label, dir, wantCode) {
  const rel = `${basename(dir)}/written.txt`;
  await expectRefusal(client, label, "write_file", { path: rel, content: "x\n" }, wantCode);
  if (existsSync(join(dir, "written.txt"))) {
    throw new Mismatch(`${label}: write_file was refused (${wantCode}) but ${rel} exists`);
  }
}

// answering returns a 1.x client that declares elicitation and answers
// every approval question with answer ("accept" approves; "decline").
function answering(answer) {
  const client = new Client({ name: "airlock-e2e", version: "1.0.0" }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async () => elicitAnswer(answer));
  return client;
}

// answering2 is answering with the 2.x client, which speaks 2026-07-28 when
// the server offers it (mode "auto", or pinned), and answers the input
// requests of that version with the same handler.
function answering2(answer, mode) {
  const client = new v2.Client({ name: "airlock-e2e-v2", version: "1.0.0" },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode } });
  client.setRequestHandler("elicitation/create", async () => elicitAnswer(answer));
  return client;
}

function elicitAnswer(answer) {
  return answer === "accept" ? { action: "accept", content: { approve: true } } : { action: answer };
}

// checkApprovals makes the same write with a client that accepts and one
// that declines, and takes ground truth from the workspace: the accepted
// write happens, the declined one ends with approval_denied, not pending.
async function checkApprovals(label, dir, connectAnswering, wantVersion) {
  for (const answer of ["accept", "decline"]) {
    const l = `${label} (${answer})`;
    const { client, version } = await connectAnswering(answer, l);
    try {
      if (wantVersion && version !== wantVersion) {
        fail(`${l}: protocol version`, wantVersion, version);
      }
      const name = `approved-${answer}-${version}.txt`;
      const rel = `${basename(dir)}/${name}`;
      const res = await call(client, "write_file", { path: rel, content: `${answer}\n` });
      if (answer === "accept") {
        if (res.isError || readFileSync(join(dir, name), "utf8") !== `${answer}\n`) {
          fail(`${l}: write_file once approved`, `${rel} written`, res);
        }
      } else {
        const text = textOf(res);
        if (res.isError !== true || codeOf(res) !== "approval_denied" || /pending|airlock approve/.test(text)) {
          fail(`${l}: write_file once declined`, "approval_denied, not pending", res);
        }
        if (existsSync(join(dir, name))) {
          throw new Mismatch(`${l}: the declined write_file wrote ${rel}`);
        }
      }
    } finally {
      await client.close();
    }
  }
  console.log(`client.mjs: ${label}: approvals ok`);
}

async function runStdio(binary, workspace) {
  for (const [mode, wantCode] of [["", "approval_required"], ["read-only", "denied"]]) {
    const label = `stdio${mode ? ` --mode ${mode}` : ""}`;
    const args = ["mcp", "--workspace", workspace];
    if (mode) args.push("--mode", mode);
    const transport = new StdioClientTransport({ command: binary, args, cwd: workspace, stderr: "inherit" });
    const client = await connect(transport, label);
    try {
      const dir = await checkCommon(client, label, workspace);
      await checkWrite(client, label, dir, wantCode);
    } finally {
      await client.close();
    }
    console.log(`client.mjs: ${label}: ok`);
  }
  const dir = mkdtempSync(join(workspace, "e2e-approvals-"));
  const params = { command: binary, args: ["mcp", "--workspace", workspace], cwd: workspace, stderr: "inherit" };
  await checkApprovals("stdio 1.x SDK", dir, async (answer, label) => {
    const client = await connect(new StdioClientTransport(params), label, answering(answer));
    return { client, version: "2025-11-25" };
  });
  await checkApprovals(`stdio 2.x client`, dir, async (answer, label) => {
    const client = await connect(new V2StdioClientTransport(params), label, answering2(answer, { pin: newestProtocol }));
    return { client, version: client.getNegotiatedProtocolVersion() };
  }, newestProtocol);
}

async function runHTTP(url, workspace) {
  const label = `http ${url}`;
  const client = await connect(new StreamableHTTPClientTransport(new URL(url)), label);
  let dir;
  try {
    dir = await checkCommon(client, label, workspace);
    await checkWrite(client, label, dir, "approval_required");
  } finally {
    await client.close();
  }
  console.log(`client.mjs: ${label}: ok`);
  await checkApprovals("http 1.x SDK", dir, async (answer, l) => {
    const c = await connect(new StreamableHTTPClientTransport(new URL(url)), l, answering(answer));
    return { client: c, version: "2025-11-25" };
  });
  // The stateful HTTP door offers versions up to 2025-11-25: the 2.x
  // client, probing for the newest, settles on that one.
  await checkApprovals("http 2.x client", dir, async (answer, l) => {
    const c = await connect(new v2.StreamableHTTPClientTransport(new URL(url)), l, answering2(answer, "auto"));
    return { client: c, version: c.getNegotiatedProtocolVersion() };
  }, "2025-11-25");
}

async function main(argv) {
  const [kind, target, workspace] = argv;
  if (argv.length !== 3 || !["stdio", "http"].includes(kind)) {
    console.error(usage);
    return 2;
  }
  try {
    readdirSync(workspace);
  } catch (err) {
    console.error(`client.mjs: workspace ${workspace}: ${err.message}`);
    return 2;
  }
  try {
    if (kind === "stdio") {
      await runStdio(target, workspace);
    } else {
      await runHTTP(target, workspace);
    }
  } catch (err) {
    console.error(`client.mjs: FAIL: ${err instanceof Mismatch ? err.message : err.stack ?? err}`);
    return 1;
  }
  return 0;
}

process.exitCode = await main(process.argv.slice(2));
