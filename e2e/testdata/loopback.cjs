// Preloaded with `node -r` by the e2e tests: a server that calls listen()
// with a port but no host (server-everything, supergateway) binds 127.0.0.1
// instead of every interface. Tests only ever listen on loopback.
'use strict';
const net = require('net');
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  const isPort = typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first));
  if (isPort && typeof args[1] !== 'string') {
    args.splice(1, 0, '127.0.0.1');
  } else if (first && typeof first === 'object' && !Array.isArray(first) &&
             first.path === undefined && first.host === undefined && first.fd === undefined && !first._handle) {
    args[0] = Object.assign({}, first, { host: '127.0.0.1' });
  }
  return listen.apply(this, args);
};
