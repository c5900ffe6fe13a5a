// lifecycle-ts-client.mjs drives the built acp-agent with the official
// TypeScript ACP SDK (@agentclientprotocol/sdk 2.4.0, unstable surface)
// through a session's life (issue 26): initialize (the capabilities first),
// session/new, prompts (session_info_update with title and updatedAt),
// session/list, session/set_title, session/fork (with its own mcpServers;
// the copied history replayed by session/load of the fork) and
// session/delete (the session gone from session/list, session/load of it
// and a second delete -32002 on the wire).
//
// Usage: node lifecycle-ts-client.mjs AGENT STORE CWD FIXTURE
//   AGENT    the acp-agent binary (run in direct mode with --store STORE)
//   STORE    the SQLite file of its sessions
//   CWD      the sessions' working directory
//   FIXTURE  a stdio MCP server (the fork's own server, named "fx")
// It prints one line "ok …" and exits 0, or prints what failed and exits 1.
import * as acp from "@agentclientprotocol/sdk/unstable";
import { spawn } from "node:child_process";
import { EventEmitter } from "node:events";
import { Readable, Writable } from "node:stream";

const [agentBin, storePath, cwd, fixture] = process.argv.slice(2);
if (!fixture) {
  console.error("usage: lifecycle-ts-client.mjs AGENT STORE CWD FIXTURE");
  process.exit(2);
}
const WAIT_MS = 60_000;

const child = spawn(agentBin, ["--store", storePath], {
  env: { PATH: process.env.PATH, HOME: process.env.HOME },
  stdio: ["pipe", "pipe", "inherit"],
});
const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));

// The wire, both ways, as JSON messages: sent (client → agent) and
// received (agent → client), to check what the SDK hides (it resolves a
// -32002 answer to session/delete as success).
const sent = [];
const received = [];
function lineSplitter(into) {
  let buf = "";
  const dec = new TextDecoder();
  return (chunk) => {
    buf += dec.decode(chunk, { stream: true });
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i).trim();
      buf = buf.slice(i + 1);
      if (line) into.push(JSON.parse(line));
    }
  };
}
const recordSent = lineSplitter(sent);
const tapOut = new TransformStream({
  transform(chunk, ctl) {
    recordSent(chunk);
    ctl.enqueue(chunk);
  },
});
tapOut.readable.pipeTo(Writable.toWeb(child.stdin)).catch(() => {});
const [forSdk, forTap] = Readable.toWeb(child.stdout).tee();
const recordReceived = lineSplitter(received);
const tapDone = (async () => {
  for await (const chunk of forTap) recordReceived(chunk);
})();

// session/update notifications, in order, and a wait on them.
const updates = [];
const arrived = new EventEmitter();
function waitUpdate(from, pred, what) {
  return new Promise((resolve, reject) => {
    const check = () => {
      const i = updates.findIndex((n, j) => j >= from && pred(n));
      if (i < 0) return false;
      arrived.off("update", check);
      clearTimeout(timer);
      resolve(i);
      return true;
    };
    const timer = setTimeout(() => {
      arrived.off("update", check);
      reject(new Error(`no session/update ${what} within ${WAIT_MS} ms; got ${JSON.stringify(updates.slice(from))}`));
    }, WAIT_MS);
    if (!check()) arrived.on("update", check);
  });
}

function must(cond, msg) {
  if (!cond) throw new Error(msg);
}
const kind = (n) => n.update.sessionUpdate;
const text = (ns) => ns.filter((n) => kind(n) === "agent_message_chunk").map((n) => n.update.content.text).join("");

// wireAnswer returns the agent's answer on the wire to the last request of
// method whose params match pred.
function wireAnswer(method, pred) {
  const req = sent.filter((m) => m.method === method && pred(m.params)).at(-1);
  must(req, `no ${method} request on the wire`);
  const res = received.find((m) => m.id === req.id && !("method" in m));
  must(res, `no answer on the wire to ${method} (id ${req.id})`);
  return res;
}

const app = acp.client().onNotification(acp.methods.client.session.update, ({ params }) => {
  updates.push(params);
  arrived.emit("update");
});

const summary = await app.connectWith(acp.ndJsonStream(tapOut.writable, forSdk), async (ctx) => {
  const init = await ctx.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
  const caps = init.agentCapabilities?.sessionCapabilities ?? {};
  for (const c of ["list", "delete", "fork", "title"]) {
    must(caps[c] && typeof caps[c] === "object", `initialize: sessionCapabilities.${c} is ${JSON.stringify(caps[c])}, want {}: ${JSON.stringify(init.agentCapabilities)}`);
  }

  const prompt = async (sessionId, t) => {
    const from = updates.length;
    const res = await ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: t }] });
    must(res.stopReason === "end_turn", `prompt ${JSON.stringify(t)}: stopReason ${res.stopReason}`);
    // The updates sent before the response: the session_info_update is among them.
    const i = await waitUpdate(from, (n) => n.sessionId === sessionId && kind(n) === "session_info_update", `session_info_update after ${JSON.stringify(t)}`);
    return { info: updates[i].update, out: updates.slice(from, i + 1).filter((n) => n.sessionId === sessionId) };
  };
  const list = async () => (await ctx.request(acp.methods.agent.session.list, {})).sessions;
  const announced = (sessionId, from) => waitUpdate(from, (n) => n.sessionId === sessionId && kind(n) === "available_commands_update", `available_commands_update of ${sessionId}`);

  // A session and its first turn: the title from the first prompt's first line.
  let from = updates.length;
  const { sessionId: sid } = await ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
  await announced(sid, from);
  const first = await prompt(sid, "/help\nplease");
  must(first.info.title === "/help", `first turn's session_info_update title ${JSON.stringify(first.info.title)}, want "/help"`);
  must(!Number.isNaN(Date.parse(first.info.updatedAt)), `updatedAt ${JSON.stringify(first.info.updatedAt)} is not ISO 8601`);
  must(text(first.out).includes("direct mode"), `/help answered ${JSON.stringify(text(first.out))}`);
  let listed = (await list()).find((s) => s.sessionId === sid);
  must(listed && listed.title === "/help" && listed.updatedAt === first.info.updatedAt,
    `session/list shows ${JSON.stringify(listed)}; want title "/help" and updatedAt ${first.info.updatedAt}`);
  const second = await prompt(sid, "/tools");
  must(second.info.title === undefined, `the second turn's session_info_update repeats the title: ${JSON.stringify(second.info)}`);
  must(Date.parse(second.info.updatedAt) > Date.parse(first.info.updatedAt), `updatedAt did not move: ${first.info.updatedAt} then ${second.info.updatedAt}`);

  // session/set_title: normalized (escape sequences, control and format
  // characters gone), stored, listed.
  const titled = await ctx.request(acp.methods.agent.session.setTitle, { sessionId: sid, title: "  Lifecycle\u001b]0;PWNED\u0007\u001b[2J\n  test\u202e\u200b " });
  must(titled.title === "Lifecycle test", `session/set_title answered ${JSON.stringify(titled)}`);
  listed = (await list()).find((s) => s.sessionId === sid);
  must(listed?.title === "Lifecycle test", `session/list after set_title: ${JSON.stringify(listed)}`);

  // session/fork with its own server: a new session, the history copied.
  from = updates.length;
  const fork = await ctx.request(acp.methods.agent.session.fork, {
    sessionId: sid, cwd, mcpServers: [{ name: "fx", command: fixture, args: [], env: [] }],
  });
  const fid = fork.sessionId;
  must(fid && fid !== sid, `session/fork answered ${JSON.stringify(fork)}`);
  await announced(fid, from);
  const tools = await prompt(fid, "/tools");
  must(text(tools.out).includes("mcp__fx__echo"), `the fork's /tools: ${JSON.stringify(text(tools.out))}; want its own server's tools`);
  from = updates.length;
  await ctx.request(acp.methods.agent.session.load, { sessionId: fid, cwd, mcpServers: [] });
  const replayed = updates.slice(from).filter((n) => n.sessionId === fid && kind(n) === "user_message_chunk").map((n) => n.update.content.text);
  must(JSON.stringify(replayed) === JSON.stringify(["/help\nplease", "/tools", "/tools"]),
    `session/load of the fork replays the prompts ${JSON.stringify(replayed)}; want the source's two, then the fork's own`);
  listed = await list();
  must(listed.some((s) => s.sessionId === fid && s.title === "Lifecycle test") && listed.some((s) => s.sessionId === sid),
    `session/list after the fork: ${JSON.stringify(listed)}`);

  // session/delete of the live source.
  const deleted = await ctx.request(acp.methods.agent.session.delete, { sessionId: sid });
  must(deleted && Object.keys(deleted).length === 0, `session/delete answered ${JSON.stringify(deleted)}`);
  let wire = wireAnswer("session/delete", (p) => p.sessionId === sid);
  must(wire.result && !wire.error, `session/delete on the wire: ${JSON.stringify(wire)}`);
  listed = await list();
  must(!listed.some((s) => s.sessionId === sid) && listed.some((s) => s.sessionId === fid),
    `session/list after delete: ${JSON.stringify(listed)}; want the fork only`);
  let loadErr;
  try {
    await ctx.request(acp.methods.agent.session.load, { sessionId: sid, cwd, mcpServers: [] });
  } catch (e) {
    loadErr = e;
  }
  must(loadErr?.code === -32002, `session/load of the deleted session: ${loadErr ? `${loadErr.code} ${loadErr.message}` : "succeeded"}; want -32002`);
  // The SDK resolves a -32002 answer to session/delete as success: the wire has it.
  await ctx.request(acp.methods.agent.session.delete, { sessionId: sid });
  wire = wireAnswer("session/delete", (p) => p.sessionId === sid);
  must(wire.error?.code === -32002, `the second session/delete on the wire: ${JSON.stringify(wire)}; want error -32002`);
  return { sid, fid, updates: updates.length };
});

child.stdin.end();
const { code, signal } = await exited;
await tapDone;
must(code === 0, `the agent exited with ${code ?? signal}`);
console.log(`ok session ${summary.sid} forked to ${summary.fid}, ${summary.updates} session/update notifications`);
