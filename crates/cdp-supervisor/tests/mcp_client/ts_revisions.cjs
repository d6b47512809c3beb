// The MCP TypeScript SDK 1.x (it speaks up to 2025-11-25) against a server
// that offers 2026-07-28 too: it negotiates 2025-11-25 and keeps one task per
// session, over stdio and streamable HTTP. Each: navigate, snapshot, a
// confirm answered (what the page received is read back), a push
// notification (resources/subscribe) when a dialog opens, and a prompt
// answered by the client's elicitation handler (browser_dialog ask_user).
//
// run.sh installs the SDK (npm) and runs it:
//   tests/mcp_client/run.sh PATH/TO/cdp-supervisor ts_revisions.cjs
"use strict";

const http = require("node:http");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { spawn } = require("node:child_process");
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const types = require("@modelcontextprotocol/sdk/types.js");
// The package's own package.json (its exports map gives a nested one).
const sdkRoot = require.resolve("@modelcontextprotocol/sdk/client/index.js").split("/dist/")[0];
const sdkVersion = JSON.parse(require("node:fs").readFileSync(`${sdkRoot}/package.json`, "utf8")).version;

const LEGACY = "2025-11-25";
const SNAPSHOT_URI = "browser://snapshot";
const DEADLINE_MS = 10000; // a dialog shows, a push arrives
const START_DEADLINE_MS = 20000; // the HTTP server prints its address
const SCENARIO_DEADLINE_MS = 120000;
const HUMAN_TEXT = "typed by the TypeScript human";
const CHROMIUM_NAMES = ["chromium", "chromium-browser", "google-chrome"];

const PAGE = `<!doctype html><html><head><meta charset=utf-8><title>ts main</title></head>
<body><p>a TypeScript client</p><script>
function ask() { window.confirmed = confirm("Proceed?"); }
function name() { window.named = prompt("Your name?", "nobody"); }
</script></body></html>`;

const log = (msg) => process.stderr.write(`[ts] ${msg}\n`);
class Fail extends Error {}
function check(cond, what) {
  if (!cond) throw new Fail(what);
  log(`ok: ${what}`);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function startSite() {
  return new Promise((resolve) => {
    const server = http.createServer((req, res) => {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(PAGE);
    });
    server.listen(0, "127.0.0.1", () => resolve(server));
  });
}

/** A client that records resource updates and answers elicitations as a human would. */
function makeClient(seen) {
  const client = new Client({ name: "ts_revisions", version: "0" }, { capabilities: { elicitation: { form: {} } } });
  client.setNotificationHandler(types.ResourceUpdatedNotificationSchema, (n) => {
    seen.updates.push(n.params.uri);
  });
  client.setRequestHandler(types.ElicitRequestSchema, (req) => {
    seen.asked.push(req.params);
    return { action: "accept", content: { action: "accept", text: HUMAN_TEXT } };
  });
  return client;
}

/** Records the version the client negotiates (the SDK tells its transport). */
function recordVersion(transport, seen) {
  const own = transport.setProtocolVersion ? transport.setProtocolVersion.bind(transport) : null;
  transport.setProtocolVersion = (v) => {
    seen.version = v;
    if (own) own(v);
  };
}

async function call(client, name, args) {
  const r = await client.callTool({ name, arguments: args || {} }, undefined, { timeout: 60000 });
  const text = (r.content || []).map((c) => c.text || "").join("");
  if (r.isError) throw new Fail(`${name}(${JSON.stringify(args)}) is a tool error: ${text}`);
  if (!r.structuredContent) throw new Fail(`${name}: no structuredContent`);
  return r.structuredContent;
}

async function evaluate(client, expression) {
  const r = await call(client, "browser_cdp", { method: "Runtime.evaluate", params: { expression, returnByValue: true } });
  return r.result.result.value;
}

async function pending(client, type) {
  const deadline = Date.now() + DEADLINE_MS;
  for (;;) {
    const snap = await call(client, "browser_snapshot");
    const d = (snap.pending_dialogs || []).find((x) => x.type === type);
    if (d) return d;
    if (Date.now() > deadline) throw new Fail(`no pending ${type} within ${DEADLINE_MS} ms`);
    await sleep(100);
  }
}

async function workflow(client, seen, port, label) {
  check(seen.version === LEGACY, `${label}: TypeScript SDK ${sdkVersion} negotiated ${seen.version}`);
  const names = (await client.listTools()).tools.map((t) => t.name);
  check(names.includes("browser_navigate") && !names.includes("browser_open"), `${label}: the 2025-11-25 tool list`);
  const url = `http://127.0.0.1:${port}/main.html`;
  const nav = await call(client, "browser_navigate", { url });
  check(nav.status === "loaded" && nav.title === "ts main", `${label}: browser_navigate loaded`);
  const snap = await call(client, "browser_snapshot");
  check(snap.url === url, `${label}: browser_snapshot shows the page`);
  await client.subscribeResource({ uri: SNAPSHOT_URI });
  const before = seen.updates.length;
  await evaluate(client, 'setTimeout(() => ask(), 0); "scheduled"');
  let d = await pending(client, "confirm");
  const deadline = Date.now() + DEADLINE_MS;
  while (seen.updates.length <= before) {
    if (Date.now() > deadline) throw new Fail(`${label}: no notifications/resources/updated within ${DEADLINE_MS} ms of the confirm`);
    await sleep(20);
  }
  check(seen.updates[before] === SNAPSHOT_URI, `${label}: a resource update came when the confirm opened`);
  let ans = await call(client, "browser_dialog", { action: "accept" });
  check(ans.answered.id === d.id, `${label}: browser_dialog accepted ${d.id}`);
  check((await evaluate(client, "window.confirmed")) === true, `${label}: the page's confirm() returned true`);
  await evaluate(client, 'setTimeout(() => name(), 0); "scheduled"');
  d = await pending(client, "prompt");
  ans = await call(client, "browser_dialog", { action: "ask_user" });
  check(seen.asked.length === 1 && seen.asked[0].message.includes("Your name?"), `${label}: the elicitation handler was asked about the prompt`);
  check(ans.answered.closed_by === "user", `${label}: ask_user answered ${d.id} by the user`);
  const got = await evaluate(client, "window.named");
  check(got === HUMAN_TEXT, `${label}: the page's prompt() returned the human's text (${JSON.stringify(got)})`);
}

async function overStdio(binary, port, tmp) {
  const seen = { updates: [], asked: [], version: null };
  const client = makeClient(seen);
  const transport = new StdioClientTransport({ command: binary, args: ["mcp"], env: { ...process.env, TMPDIR: tmp }, stderr: "ignore" });
  recordVersion(transport, seen);
  await client.connect(transport);
  try {
    await workflow(client, seen, port, "stdio");
  } finally {
    await client.close();
  }
}

async function overHttp(binary, port, tmp) {
  const seen = { updates: [], asked: [], version: null };
  const errPath = path.join(tmp, "http.stderr");
  const err = fs.openSync(errPath, "w");
  const proc = spawn(binary, ["mcp", "--http", "127.0.0.1:0"], { env: { ...process.env, TMPDIR: tmp }, stdio: ["ignore", "ignore", err] });
  try {
    const deadline = Date.now() + START_DEADLINE_MS;
    let url = null;
    while (!url) {
      const m = /listening on (http:\/\/\S+)/.exec(fs.readFileSync(errPath, "utf8"));
      if (m) url = m[1];
      else if (Date.now() > deadline || proc.exitCode !== null) throw new Fail("http: the server printed no address");
      else await sleep(50);
    }
    const client = makeClient(seen);
    const transport = new StreamableHTTPClientTransport(new URL(url));
    recordVersion(transport, seen);
    await client.connect(transport);
    try {
      await workflow(client, seen, port, "http");
    } finally {
      await transport.terminateSession().catch(() => {});
      await client.close();
    }
  } finally {
    proc.kill("SIGINT");
    await Promise.race([new Promise((r) => proc.once("exit", r)), sleep(10000)]);
    if (proc.exitCode === null) proc.kill("SIGKILL");
    fs.closeSync(err);
  }
}

function onPath(name) {
  return (process.env.PATH || "").split(path.delimiter).some((dir) => {
    try {
      fs.accessSync(path.join(dir, name), fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

async function main() {
  if (process.argv.length !== 3) {
    log("usage: node ts_revisions.cjs PATH/TO/cdp-supervisor");
    return 2;
  }
  const binary = fs.realpathSync(process.argv[2]);
  if (!CHROMIUM_NAMES.some(onPath)) {
    log(`FAIL: no Chromium on PATH (${CHROMIUM_NAMES.join(", ")})`);
    return 1;
  }
  log(`MCP TypeScript SDK ${sdkVersion}`);
  const site = await startSite();
  const port = site.address().port;
  let failed = 0;
  for (const [name, run] of [["stdio", overStdio], ["http", overHttp]]) {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "cdp-ts-"));
    let timer;
    try {
      await Promise.race([
        run(binary, port, tmp),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Fail(`${name}: not done within ${SCENARIO_DEADLINE_MS} ms`)), SCENARIO_DEADLINE_MS);
        }),
      ]);
      log(`PASS ${name}`);
    } catch (e) {
      failed += 1;
      log(`FAIL ${name}: ${e && e.stack ? e.stack : e}`);
      const errPath = path.join(tmp, "http.stderr");
      if (fs.existsSync(errPath)) log(`last lines of http.stderr:\n${fs.readFileSync(errPath, "utf8").split("\n").slice(-15).join("\n")}`);
    } finally {
      clearTimeout(timer);
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  }
  site.close();
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    log(`FAIL: ${e && e.stack ? e.stack : e}`);
    process.exit(1);
  },
);
