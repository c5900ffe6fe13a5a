// An editor on the official TypeScript ACP SDK (2.4.0, the current schema,
// whose client validates every message it gets): it spawns the agent given
// as argv[2] (argv[3..] its arguments) and initializes with the
// clientCapabilities JSON in $CLIENT_CAPABILITIES; opens a session with the
// mcpServers JSON in $MCP_SERVERS; sends each session/set_config_option of
// the JSON array in $CONFIG (objects with configId, value and, for a
// boolean, type "boolean"); sends each prompt of the JSON array in
// $PROMPTS; waits (at most 60 s) for a notice whose title contains
// $AWAIT_NOTICE, or a session_info_update whose title is $AWAIT_TITLE, when
// set; with $LOAD set, closes the session and loads it again (session/load,
// its replay recorded apart); and prints one JSON object: the initialize
// and session/new responses, each set_config_option response, the
// session/update params it got (in order; a load's replay in loadUpdates),
// the session/request_permission params it answered, each prompt's
// stopReason and the session/list response.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk/unstable";

const [bin, ...args] = process.argv.slice(2);
const child = spawn(bin, args, { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

let updates = [];
const permissions = [];
const app = acp
  .client({ name: "acp-agent-e2e-ts-client" })
  .onNotification(acp.methods.client.session.update, (cx) => {
    updates.push(cx.params);
  })
  .onRequest(acp.methods.client.session.requestPermission, (cx) => {
    permissions.push(cx.params);
    return { outcome: { outcome: "selected", optionId: cx.params.options[0].optionId } };
  });

const out = await app.connectWith(stream, async (cx) => {
  const init = await cx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION ?? 1,
    clientCapabilities: JSON.parse(process.env.CLIENT_CAPABILITIES ?? "{}"),
    clientInfo: { name: "acp-agent-e2e-ts-client", version: "1.0.0" },
  });
  const created = await cx.request(acp.methods.agent.session.new, {
    cwd: process.cwd(),
    mcpServers: JSON.parse(process.env.MCP_SERVERS || "[]") ?? [],
  });
  const { sessionId } = created;
  const configs = [];
  for (const c of JSON.parse(process.env.CONFIG || "[]") ?? []) {
    configs.push(await cx.request(acp.methods.agent.session.setConfigOption, { sessionId, ...c }));
  }
  const stops = [];
  for (const text of JSON.parse(process.env.PROMPTS || "[]") ?? []) {
    const res = await cx.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text }],
    });
    stops.push(res.stopReason);
  }
  const awaited = process.env.AWAIT_NOTICE, title = process.env.AWAIT_TITLE;
  const arrived = (u) =>
    (awaited && u.update.sessionUpdate === "notice" && u.update.title.includes(awaited)) ||
    (title && u.update.sessionUpdate === "session_info_update" && u.update.title === title);
  for (let waited = 0; (awaited || title) && waited < 60000; waited += 50) {
    if (updates.some(arrived)) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const list = await cx.request(acp.methods.agent.session.list, {});
  await cx.request(acp.methods.agent.session.close, { sessionId });
  let loadUpdates;
  if (process.env.LOAD) {
    const live = updates;
    updates = [];
    await cx.request(acp.methods.agent.session.load, { sessionId, cwd: process.cwd(), mcpServers: [] });
    loadUpdates = updates;
    updates = live;
    await cx.request(acp.methods.agent.session.close, { sessionId });
  }
  return { initialize: init, newSession: created, configs, sessionId, updates, loadUpdates, permissions, stops, list };
});
child.stdin.end();
process.stdout.write(JSON.stringify(out) + "\n");
