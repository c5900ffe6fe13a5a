// An editor on the official TypeScript ACP SDK (2.4.0) that reaches its
// agent over the network, with the SDK's own client transports of the
// remote-transport RFD: Streamable HTTP (experimental/http-client) or
// WebSocket (experimental/ws-client, with the npm ws package's WebSocket:
// Node 20 has none of its own). The stdio editors beside it
// (ts-client.mjs, mcpacp-ts-client.mjs) spawn the agent; this one connects
// to a URL: acp-agent gateway's /acp, or the SDK's reference server
// (ts-reference-server.mjs).
//
// usage: node ts-remote-client.mjs <http|ws> <url> <cwd> [--token T]
//          [--scenario default|load|two-sessions|stay] [--session ID]
//          [--message TEXT]
//
// --token sends "Authorization: Bearer T" on every request (and on the
// WebSocket upgrade). The client answers session/request_permission by
// allowing once, and, when initialize's agentCapabilities.mcpCapabilities.acp
// is true, hosts an MCP server named "tsclient" (tool echo) over ACP
// (MCP-over-ACP, the published binding) and declares it in session/new.
//
// Scenarios:
//   default       initialize; session/new {cwd, mcpServers}; prompt /tools,
//                 then /call mcp__tsclient__echo {"message": TEXT} when the
//                 server is hosted; session/close when the agent offers it.
//   load          initialize; session/load --session ID (cwd, no servers):
//                 "replayed" holds the updates that came before its answer.
//   two-sessions  two sessions on one connection, their prompts (as in
//                 default) sent in parallel; then both closed.
//   stay          one session and a /tools prompt, then a first stdout line
//                 {"ready": true, "sessionId": ...}; the connection stays
//                 open until stdin ends (for tests that kill the server
//                 under it); then one more /tools prompt, whose failure is
//                 recorded like any other, and the result.
//
// It prints ONE JSON object on stdout at the end (stay: after its ready
// line):
//
//   {"transport": "http"|"ws", "url", "scenario",
//    "protocolVersion", "agentInfo", "agentCapabilities",
//    "mcpOverAcp": bool, "hostedServer": "tsclient" or null,
//    "sessionId": the first session's id or null, "sessionIds": [...],
//    "turns": [{"sessionId", "prompt", "stopReason" (null if it failed),
//               "text": the agent_message_chunk texts of the turn,
//               "toolCalls": [{"toolCallId", "title", "status", "text"}]}],
//    "stopReasons": [each turn's], "texts": [each turn's],
//    "toolCallStatuses": [each tool call's last status, in order],
//    "permissions": [{"sessionId", "toolCallId", "optionId"}],
//    "replayed": [session/update params] (load), "updates": count of all,
//    "closed": [ids session/close answered],
//    "connectionClosed": whether the connection ended before the script
//                        closed it, "connectionError": its error or null,
//    "errors": [{"step", "message", "code", "data", "status"}]}
//
// errors holds every request that failed, with its JSON-RPC code and data;
// status is data.status, the HTTP status of a request the Streamable HTTP
// transport failed (its data is {status, body}). Requests time out after
// 60 s (a loaded CI machine). The exit status is non-zero only for an
// unexpected exception (a bug of this script, a bad command line).
import { Readable } from "node:stream";

import * as acp from "@agentclientprotocol/sdk/unstable";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import { fromMcpServer } from "@agentclientprotocol/sdk/experimental/mcp-server";
import { McpServer } from "@modelcontextprotocol/server";
import { WebSocket } from "ws";
import * as z from "zod/v4";

const usage =
  "usage: node ts-remote-client.mjs <http|ws> <url> <cwd> [--token T] [--scenario default|load|two-sessions|stay] [--session ID] [--message TEXT]";
const TIMEOUT_MS = 60_000;
const HOSTED = "tsclient";

function parseArgs(argv) {
  const [transport, url, cwd, ...rest] = argv;
  const opts = { transport, url, cwd, token: "", scenario: "default", session: "", message: "hi from the remote TS client" };
  for (let i = 0; i < rest.length; i += 2) {
    const key = { "--token": "token", "--scenario": "scenario", "--session": "session", "--message": "message" }[rest[i]];
    if (!key || rest[i + 1] === undefined) throw new Error(`${usage}\nunknown or incomplete option ${rest[i]}`);
    opts[key] = rest[i + 1];
  }
  if (!["http", "ws"].includes(transport) || !url || !cwd) throw new Error(usage);
  if (!["default", "load", "two-sessions", "stay"].includes(opts.scenario)) throw new Error(`${usage}\nunknown scenario ${opts.scenario}`);
  if (opts.scenario === "load" && !opts.session) throw new Error(`${usage}\nthe load scenario needs --session ID`);
  return opts;
}

const opts = parseArgs(process.argv.slice(2));
const headers = opts.token ? { Authorization: `Bearer ${opts.token}` } : {};

// The transport's last act, for the script to wait for before it exits:
// the DELETE that ends a Streamable HTTP connection, or the WebSocket
// closing.
let transportEnded = Promise.resolve();
function trackedFetch(input, init) {
  const res = globalThis.fetch(input, init);
  if (init?.method === "DELETE") transportEnded = res.then((r) => r.body?.cancel()).catch(() => {});
  return res;
}
class TrackedWebSocket extends WebSocket {
  constructor(...args) {
    super(...args);
    transportEnded = new Promise((resolve) => this.once("close", resolve));
  }
}
const stream =
  opts.transport === "http"
    ? createHttpStream(opts.url, { headers, fetch: trackedFetch })
    : createWebSocketStream(opts.url, { headers, WebSocket: TrackedWebSocket });

const out = {
  transport: opts.transport,
  url: opts.url,
  scenario: opts.scenario,
  protocolVersion: null,
  agentInfo: null,
  agentCapabilities: null,
  mcpOverAcp: false,
  hostedServer: null,
  sessionId: null,
  sessionIds: [],
  turns: [],
  stopReasons: [],
  texts: [],
  toolCallStatuses: [],
  permissions: [],
  replayed: [],
  updates: 0,
  closed: [],
  connectionClosed: false,
  connectionError: null,
  errors: [],
};

// Every session/update, in order, and the tool calls by id.
const updates = [];
const toolCalls = new Map();
function onUpdate(params) {
  updates.push(params);
  const u = params.update;
  if (u.sessionUpdate !== "tool_call" && u.sessionUpdate !== "tool_call_update") return;
  const call = toolCalls.get(u.toolCallId) ?? { toolCallId: u.toolCallId, sessionId: params.sessionId, title: null, status: null, text: "" };
  if (u.title) call.title = u.title;
  if (u.status) call.status = u.status;
  const text = (u.content ?? []).filter((c) => c.type === "content" && c.content?.type === "text").map((c) => c.content.text);
  if (text.length > 0) call.text = text.join("");
  toolCalls.set(u.toolCallId, call);
}

// The client-hosted MCP server: one tool, echo.
const tools = fromMcpServer(() => {
  const server = new McpServer({ name: "ts-remote-client-tools", version: "1.0.0" });
  server.registerTool(
    "echo",
    { description: "Echo a message from the remote TypeScript editor.", inputSchema: z.object({ message: z.string() }) },
    async ({ message }) => ({ content: [{ type: "text", text: `TS remote editor echo: ${message}` }] }),
  );
  return server;
});
const provider = new acp.McpOverAcpProvider();

const app = acp
  .client({ name: "acp-agent-e2e-ts-remote-client" })
  .onRequest(acp.methods.client.mcp.message, provider.handleRequest)
  .onNotification(acp.methods.client.session.update, ({ params }) => onUpdate(params))
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    const allow =
      params.options.find((o) => o.kind === "allow_once") ?? params.options.find((o) => o.kind.startsWith("allow")) ?? params.options[0];
    out.permissions.push({ sessionId: params.sessionId, toolCallId: params.toolCall?.toolCallId ?? null, optionId: allow.optionId });
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  });

const conn = app.connect(stream);
const agent = conn.agent;
let closing = false;
conn.closed.finally(() => {
  if (closing) return;
  out.connectionClosed = true;
  const why = conn.signal.reason;
  out.connectionError = why === undefined ? null : String(why?.message ?? why);
});

// request sends one request, bounded by TIMEOUT_MS; a failure is recorded
// in out.errors under step and returned as undefined.
async function request(step, method, params) {
  const cancel = new AbortController();
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => {
      cancel.abort();
      reject(Object.assign(new Error(`${method} timed out after ${TIMEOUT_MS / 1000} s`), { code: null }));
    }, TIMEOUT_MS);
  });
  try {
    return await Promise.race([agent.request(method, params, { cancellationSignal: cancel.signal }), timeout]);
  } catch (err) {
    const cause = err?.cause?.message ? ` (${err.cause.message})` : "";
    out.errors.push({
      step,
      message: String(err?.message ?? err) + cause,
      code: typeof err?.code === "number" ? err.code : null, // a JSON-RPC code, not a Node one (ECONNREFUSED)
      data: err?.data ?? null,
      status: err?.data?.status ?? null,
    });
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

// prompt runs one turn of session sid and records it.
async function prompt(sid, text) {
  const before = new Set(toolCalls.keys());
  const from = updates.length;
  const res = await request(`session/prompt ${text.split(" ")[0]}`, acp.methods.agent.session.prompt, {
    sessionId: sid,
    prompt: [{ type: "text", text }],
  });
  const mine = updates.slice(from).filter((u) => u.sessionId === sid);
  const turn = {
    sessionId: sid,
    prompt: text,
    stopReason: res?.stopReason ?? null,
    text: mine
      .filter((u) => u.update.sessionUpdate === "agent_message_chunk" && u.update.content?.type === "text")
      .map((u) => u.update.content.text)
      .join(""),
    toolCalls: [...toolCalls.values()]
      .filter((c) => c.sessionId === sid && !before.has(c.toolCallId))
      .map(({ toolCallId, title, status, text }) => ({ toolCallId, title, status, text })),
  };
  out.turns.push(turn);
  return turn;
}

// newSession opens a session with the hosted server when there is one.
async function newSession(registration) {
  const res = await request("session/new", acp.methods.agent.session.new, {
    cwd: opts.cwd,
    mcpServers: registration ? [registration.declaration] : [],
  });
  if (!res) return undefined;
  out.sessionIds.push(res.sessionId);
  out.sessionId ??= res.sessionId;
  return res.sessionId;
}

// turns are the default scenario's prompts.
async function turns(sid) {
  await prompt(sid, "/tools");
  if (out.hostedServer) {
    await prompt(sid, `/call mcp__${HOSTED}__echo ${JSON.stringify({ message: opts.message })}`);
  }
}

async function closeSession(sid) {
  if (!out.agentCapabilities?.sessionCapabilities?.close) return;
  if ((await request("session/close", acp.methods.agent.session.close, { sessionId: sid })) !== undefined) out.closed.push(sid);
}

// stdinEnded resolves when stdin ends (or errors).
function stdinEnded() {
  return new Promise((resolve) => {
    const input = Readable.from(process.stdin);
    (async () => {
      try {
        for await (const _ of input); // eslint-disable-line no-unused-vars
      } catch {
        // ended all the same
      }
      resolve();
    })();
  });
}

async function run() {
  const init = await request("initialize", acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: {},
    clientInfo: { name: "acp-agent-e2e-ts-remote-client", version: "1.0.0" },
  });
  if (!init) return;
  out.protocolVersion = init.protocolVersion;
  out.agentInfo = init.agentInfo ?? null;
  out.agentCapabilities = init.agentCapabilities ?? {};
  out.mcpOverAcp = out.agentCapabilities.mcpCapabilities?.acp === true;
  let registration;
  if (out.mcpOverAcp && opts.scenario !== "load") {
    registration = provider.registerServer(agent, { name: HOSTED, handler: tools.handler });
    out.hostedServer = HOSTED;
  }

  switch (opts.scenario) {
    case "default": {
      const sid = await newSession(registration);
      if (!sid) break;
      await turns(sid);
      await closeSession(sid);
      break;
    }
    case "load": {
      const from = updates.length;
      const res = await request("session/load", acp.methods.agent.session.load, {
        sessionId: opts.session,
        cwd: opts.cwd,
        mcpServers: [],
      });
      out.replayed = updates.slice(from).filter((u) => u.sessionId === opts.session);
      if (res !== undefined) {
        out.sessionId = opts.session;
        out.sessionIds.push(opts.session);
        await closeSession(opts.session);
      }
      break;
    }
    case "two-sessions": {
      const sids = (await Promise.all([newSession(registration), newSession(registration)])).filter(Boolean);
      await Promise.all(sids.map((sid) => turns(sid)));
      await Promise.all(sids.map((sid) => closeSession(sid)));
      break;
    }
    case "stay": {
      const sid = await newSession(registration);
      if (!sid) break;
      await prompt(sid, "/tools");
      process.stdout.write(JSON.stringify({ ready: true, sessionId: sid }) + "\n");
      await stdinEnded();
      await prompt(sid, "/tools");
      break;
    }
  }
  await registration?.dispose();
}

await run();
closing = true;
out.updates = updates.length;
out.stopReasons = out.turns.map((t) => t.stopReason);
out.texts = out.turns.map((t) => t.text);
out.toolCallStatuses = [...toolCalls.values()].map((c) => c.status);
// Closing the connection ends the transport: DELETE for Streamable HTTP,
// a close frame for WebSocket.
conn.close();
await Promise.race([transportEnded, new Promise((r) => setTimeout(r, 5000).unref())]);
process.stdout.write(JSON.stringify(out) + "\n");
process.exit(0);
