// The official TypeScript ACP SDK's own network server (2.4.0,
// experimental/server and experimental/node: the remote-transport RFD's
// Streamable HTTP and WebSocket at /acp) in front of a stdio ACP agent:
// each ACP connection a client opens gets a new agent process, spoken to
// over newline-delimited JSON on its stdin and stdout. It is the reference
// that e2e/testdata/ts-remote-client.mjs is checked against, and the
// baseline acp-agent gateway's /acp is compared with.
//
// usage: node ts-reference-server.mjs [--port N] <agent binary> [agent args...]
//
// It listens on 127.0.0.1 (port N, default any free one) and prints one
// line on stdout once listening: the http URL of /acp
// (http://127.0.0.1:<port>/acp; WebSocket clients use ws://, same host,
// port and path). Any other path is 404. The agent processes inherit the
// environment and stderr; a connection's process gets EOF on stdin when
// the connection closes (DELETE, the WebSocket closing, or the server
// ending: SIGTERM and SIGINT close every connection, then exit).
import http from "node:http";
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";

import { ndJsonStream } from "@agentclientprotocol/sdk";
import { AcpServer } from "@agentclientprotocol/sdk/experimental/server";
import { createNodeHttpHandler, createNodeWebSocketUpgradeHandler } from "@agentclientprotocol/sdk/experimental/node";
import { WebSocketServer } from "ws";

const argv = process.argv.slice(2);
let port = 0;
if (argv[0] === "--port") {
  port = Number(argv[1]);
  argv.splice(0, 2);
}
const [agentBin, ...agentArgs] = argv;
if (!agentBin || !Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write("usage: node ts-reference-server.mjs [--port N] <agent binary> [agent args...]\n");
  process.exit(2);
}

// children are the running agent processes, each with the promise of its
// exit.
const children = new Map();

// agent is the AgentConnector: each accepted connection is piped, message
// by message, to a new agent process. The connection ends when the process
// exits (closed); the process's stdin ends when the connection does.
const agent = {
  connect(stream) {
    const child = spawn(agentBin, agentArgs, { stdio: ["pipe", "pipe", "inherit"] });
    const exited = new Promise((resolve) => {
      child.on("exit", () => {
        children.delete(child);
        resolve();
      });
      child.on("error", (err) => {
        process.stderr.write(`ts-reference-server: starting ${agentBin}: ${err.message}\n`);
        children.delete(child);
        resolve();
      });
    });
    children.set(child, exited);
    child.stdin.on("error", () => {}); // a write after the agent exited
    const agentStream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
    // Client to agent: when the connection closes, so does the agent's
    // stdin (ndJsonStream's writable does not close its output itself).
    stream.readable
      .pipeTo(agentStream.writable)
      .catch(() => {})
      .finally(() => child.stdin.end());
    // Agent to client: until the agent's stdout ends.
    agentStream.readable.pipeTo(stream.writable).catch(() => {});
    return { closed: exited };
  },
};

const acp = new AcpServer({ agent });
const onRequest = createNodeHttpHandler(acp);
const wss = new WebSocketServer({ noServer: true });
const onUpgrade = createNodeWebSocketUpgradeHandler(acp, wss);

const isAcp = (req) => new URL(req.url ?? "/", "http://x").pathname === "/acp";
const server = http.createServer((req, res) => {
  if (!isAcp(req)) {
    res.writeHead(404, { "Content-Type": "text/plain" }).end("Not Found");
    return;
  }
  onRequest(req, res);
});
server.on("upgrade", (req, socket, head) => {
  if (!isAcp(req)) {
    socket.end("HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n");
    return;
  }
  onUpgrade(req, socket, head);
});

let stopping = false;
async function stop() {
  if (stopping) return;
  stopping = true;
  server.close();
  await acp.close().catch(() => {});
  for (const child of children.keys()) child.stdin.end();
  const deadline = setTimeout(() => {
    for (const child of children.keys()) child.kill("SIGKILL");
    process.exit(0);
  }, 5000);
  deadline.unref();
  await Promise.all(children.values());
  process.exit(0);
}
process.on("SIGTERM", stop);
process.on("SIGINT", stop);

server.listen(port, "127.0.0.1", () => {
  process.stdout.write(`http://127.0.0.1:${server.address().port}/acp\n`);
});
