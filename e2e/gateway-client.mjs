// gateway-client.mjs drives `airlock gateway` over stdio with the official
// TypeScript SDK's client, as an agent that embeds it would: it lists the
// tools (each named SERVER__TOOL), echoes a fresh token through the
// everything server, reads a file it wrote itself through the filesystem
// server, and is refused the filesystem server's destructive write_file
// (an operator's role does not reach high risk), which writes nothing.
//
//	node gateway-client.mjs BINARY UPSTREAMS WORKSPACE FILES
//
// UPSTREAMS names the servers "everything" and "files", the latter allowed
// into the directory FILES. Any mismatch exits 1 with a line saying what
// was expected and what came.
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

// callTimeoutMs bounds one request, so a hung gateway fails the run with a
// message instead of stalling until the test's own deadline.
const callTimeoutMs = 30_000;

class Mismatch extends Error {}

function fail(what, want, got) {
  throw new Mismatch(`${what}: want ${want}, got ${JSON.stringify(got)}`);
}

function textOf(res) {
  return (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

async function call(client, name, args) {
  return client.callTool({ name, arguments: args }, undefined, { timeout: callTimeoutMs });
}

async function run(binary, upstreams, workspace, files) {
  const transport = new StdioClientTransport({
    command: binary,
    args: ["gateway", "--upstreams", upstreams, "--workspace", workspace],
    cwd: workspace,
    stderr: "inherit",
  });
  const client = new Client({ name: "airlock-gateway-e2e", version: "1.0.0" });
  await client.connect(transport, { timeout: callTimeoutMs });
  try {
    const { tools } = await client.listTools(undefined, { timeout: callTimeoutMs });
    const names = tools.map((t) => t.name);
    for (const want of ["everything__echo", "files__read_text_file"]) {
      if (!names.includes(want)) fail("tools/list", `a tool named ${want}`, names);
    }
    if (names.includes("files__write_file")) fail("tools/list for an operator", "no files__write_file (high risk)", names);
    const stray = names.filter((n) => !n.startsWith("everything__") && !n.startsWith("files__"));
    if (stray.length > 0) fail("tools/list", "only SERVER__TOOL names of the two servers", stray);

    const token = `gateway-ts ${process.pid} ${Date.now()}`;
    const echo = await call(client, "everything__echo", { message: token });
    // The text comes wrapped in airlock's envelope for untrusted content.
    if (echo.isError || !textOf(echo).includes(`\nEcho: ${token}\n`)) fail("everything__echo", `"Echo: ${token}" in an envelope`, echo);

    const note = join(files, "ts-note.txt");
    writeFileSync(note, `first line\n${token}\n`);
    const read = await call(client, "files__read_text_file", { path: note });
    if (read.isError || !textOf(read).includes(token)) fail("files__read_text_file", `the file's content (${token})`, read);

    const written = join(files, "ts-written.txt");
    const write = await call(client, "files__write_file", { path: written, content: token });
    if (write.isError !== true || write.structuredContent?.code !== "role_not_allowed") {
      fail("files__write_file as an operator", "isError with code role_not_allowed", write);
    }
    if (existsSync(written)) throw new Mismatch(`files__write_file was refused, yet ${written} exists`);
  } finally {
    await client.close();
  }
  console.log("gateway-client.mjs: ok");
}

const argv = process.argv.slice(2);
if (argv.length !== 4) {
  console.error("usage: node gateway-client.mjs BINARY UPSTREAMS WORKSPACE FILES");
  process.exitCode = 2;
} else {
  try {
    await run(...argv);
  } catch (err) {
    console.error(`gateway-client.mjs: FAIL: ${err instanceof Mismatch ? err.message : err.stack ?? err}`);
    process.exitCode = 1;
  }
}
