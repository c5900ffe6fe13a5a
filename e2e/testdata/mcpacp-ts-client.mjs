// An editor built on the official TypeScript ACP SDK (2.4.0) that hosts an
// MCP server over ACP (the published MCP-over-ACP binding): it spawns the
// agent, reads initialize's mcpCapabilities.acp before declaring the
// server, opens a session with it, and drives the server's tools through
// the agent's /call. It prints one JSON object on stdout with what it saw;
// e2e/mcpacp_test.go checks it.
//
// usage: node mcpacp-ts-client.mjs <cwd> <agent binary> [agent args...]
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";

import * as acp from "@agentclientprotocol/sdk/unstable";
import { fromMcpServer } from "@agentclientprotocol/sdk/experimental/mcp-server";
import { McpServer } from "@modelcontextprotocol/server";
import * as z from "zod/v4";

const [cwd, agentBin, ...agentArgs] = process.argv.slice(2);
const deadline = 60_000;

const child = spawn(agentBin, agentArgs, { stdio: ["pipe", "pipe", "inherit"], env: process.env });
const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

// Every session/update, and waiters for one that matches.
const updates = [];
let changed = () => {};
function waitUpdate(match, what) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), deadline);
    const check = () => {
      const u = updates.find(match);
      if (u) {
        clearTimeout(timer);
        resolve(u);
        return true;
      }
      return false;
    };
    if (check()) return;
    const prev = changed;
    changed = () => {
      prev();
      check();
    };
  });
}

const progressText = "half way, from the TypeScript editor";
const tools = fromMcpServer(() => {
  const server = new McpServer({ name: "ts-editor-tools", version: "1.0.0" });
  server.registerTool(
    "echo",
    { description: "Echo a message from the TypeScript editor.", inputSchema: z.object({ message: z.string() }) },
    async ({ message }) => ({ content: [{ type: "text", text: `TS editor echo: ${message}` }] }),
  );
  server.registerTool(
    "progress",
    { description: "Report progress, then finish.", inputSchema: z.object({}) },
    async (_args, ctx) => {
      const token = ctx.mcpReq._meta?.progressToken;
      if (token !== undefined) {
        await ctx.mcpReq.notify({
          method: "notifications/progress",
          params: { progressToken: token, progress: 1, total: 2, message: progressText },
        });
        // The agent shows progress only while the call runs: finish once
        // the editor has seen it.
        await waitUpdate((u) => JSON.stringify(u).includes(progressText), "the progress update");
      }
      return { content: [{ type: "text", text: "progress done" }] };
    },
  );
  return server;
});

const provider = new acp.McpOverAcpProvider();
const app = acp
  .client({ name: "mcpacp-ts-client" })
  .onRequest(acp.methods.client.mcp.message, provider.handleRequest)
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params);
    changed();
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    const allow = params.options.find((o) => o.kind.startsWith("allow")) ?? params.options[0];
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  });

const out = {};
const conn = app.connect(stream);
const agent = conn.agent;

// Text of the agent's messages in updates[from:].
const textFrom = (from) =>
  updates
    .slice(from)
    .filter((u) => u.update.sessionUpdate === "agent_message_chunk" && u.update.content.type === "text")
    .map((u) => u.update.content.text)
    .join("");

async function prompt(sessionId, text) {
  const from = updates.length;
  const res = await agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
  return { stopReason: res.stopReason, text: textFrom(from), updates: updates.slice(from) };
}

// The final status and content of the last tool call in a turn's updates.
function finalTool(turn) {
  const ends = turn.updates.filter((u) => u.update.sessionUpdate === "tool_call_update" && u.update.status);
  const end = ends[ends.length - 1]?.update;
  if (!end) return null;
  return {
    status: end.status,
    text: (end.content ?? []).filter((c) => c.type === "content" && c.content.type === "text").map((c) => c.content.text),
  };
}

try {
  const init = await agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: {},
    clientInfo: { name: "mcpacp-ts-client", version: "1.0.0" },
  });
  out.mcpCapabilities = init.agentCapabilities?.mcpCapabilities ?? {};
  if (out.mcpCapabilities.acp !== true) {
    out.skippedBecause = "the agent does not advertise mcpCapabilities.acp";
  } else {
    const registration = provider.registerServer(agent, { name: "editor", handler: tools.handler, serverId: "ts-editor-1" });
    out.declaration = registration.declaration;
    const from = updates.length;
    const session = await agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [registration.declaration] });
    const sessionId = session.sessionId;
    await waitUpdate(
      (u) => updates.indexOf(u) >= from && u.sessionId === sessionId && u.update.sessionUpdate === "available_commands_update",
      "available_commands_update",
    );
    out.servers = (await prompt(sessionId, "/servers")).text;
    out.tools = (await prompt(sessionId, "/tools")).text;
    out.echo = finalTool(await prompt(sessionId, '/call mcp__editor__echo {"message":"hi from TS"}'));
    const progress = await prompt(sessionId, "/call mcp__editor__progress {}");
    out.progressShown = JSON.stringify(progress.updates).includes(progressText);
    out.progress = finalTool(progress);
    await agent.request(acp.methods.agent.session.close, { sessionId });
    await registration.dispose();
  }
} catch (err) {
  out.error = String(err?.stack ?? err);
}
// As an editor ends an agent: close its stdin, read its stdout to the end
// (the agent answers what is under way first), wait for it to exit.
child.stdin.end();
const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
out.exit = await exited;
clearTimeout(timer);
conn.close();
process.stdout.write(JSON.stringify(out) + "\n");
process.exit(0);
