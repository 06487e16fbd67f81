// client.mjs drives airlock's MCP server with the official TypeScript SDK,
// the client most agents embed, and checks what a model would see: the
// tool list, an exact calculation, refusals that are tool results (isError)
// with a machine-readable code, and a file read from the workspace.
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
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

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

async function connect(transport, label) {
  const client = new Client({ name: "airlock-e2e", version: "1.0.0" });
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

  await expectText(client, label, "calculate", { expression: "($100 + $250.75) * 20%" },
    (text) => text.trim() === "70.15", "text 70.15");
  await expectRefusal(client, label, "calculate", { expr: "1" }, "invalid_arguments");
  await expectRefusal(client, label, "calculate", { expression: "2 x 3" }, "invalid_syntax");

  // A fresh file, so that a stale server or a cached answer cannot pass.
  const dir = mkdtempSync(join(workspace, "e2e-"));
  const rel = `${basename(dir)}/notes.txt`;
  const token = `airlock-e2e ${process.pid} ${Date.now()}`;
  writeFileSync(join(dir, "notes.txt"), `first line\n${token}\nthird line\n`);
  await expectText(client, label, "read_file", { path: rel },
    (text) => text.includes(token) && text.includes("first line"), `the file's content (${token})`);
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
}

async function runHTTP(url, workspace) {
  const label = `http ${url}`;
  const client = await connect(new StreamableHTTPClientTransport(new URL(url)), label);
  try {
    const dir = await checkCommon(client, label, workspace);
    await checkWrite(client, label, dir, "approval_required");
  } finally {
    await client.close();
  }
  console.log(`client.mjs: ${label}: ok`);
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
