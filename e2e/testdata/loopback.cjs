// Preloaded with `node -r` by the e2e tests: a server that calls listen()
// with a port but no host (server-everything, supergateway) binds 127.0.0.1
// instead of every interface. Tests only ever listen on loopback.
//
// Once such a server listens, this prints one line on stderr,
// "loopback.cjs: listening on 127.0.0.1:<port>", with the port it got: the
// tests start servers on port 0 (PORT=0, --port 0) and read the port from
// that line, since the servers themselves only echo the port they were given.
'use strict';
const net = require('net');
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  const isPort = typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first));
  let rewritten = false;
  if (isPort && typeof args[1] !== 'string') {
    args.splice(1, 0, '127.0.0.1');
    rewritten = true;
  } else if (first && typeof first === 'object' && !Array.isArray(first) &&
             first.path === undefined && first.host === undefined && first.fd === undefined && !first._handle) {
    args[0] = Object.assign({}, first, { host: '127.0.0.1' });
    rewritten = true;
  }
  if (rewritten) {
    this.once('listening', () => {
      const a = this.address();
      if (a && typeof a === 'object') {
        process.stderr.write(`loopback.cjs: listening on 127.0.0.1:${a.port}\n`);
      }
    });
  }
  return listen.apply(this, args);
};
