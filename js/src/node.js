// The package's Node entry: everything of rsio.js, with a connect() that also opens
// tcp://host:port, tls://host:port and unix:///path (a net.Socket, PROTOCOL.md §1), and
// ws:// / wss:// on every Node from 20 on.
//
// WebSocket under Node: Node 22 has a global WebSocket; Node 20 has one only behind
// --experimental-websocket. Where there is none, connect() loads the `ws` package (this
// package's one dependency: small, no dependencies of its own, the WebSocket most Node
// servers and clients use). It is imported only when a ws:// URL is opened without a
// global WebSocket, so TCP users and browsers never load it.

import net from "node:net";
import tls from "node:tls";

import { Connection, ConnectionClosedError, connect as connectWebSocket, openWebSocket } from "./rsio.js";

export * from "./rsio.js";

const END_TIMEOUT_MS = 2000; // after our end(), how long the peer has to close its side

/**
 * Open a connection: ws://, wss://, tcp://host:port, tls://host:port, unix:///path. Resolves
 * once the transport is open and our clientHello is sent. Node-only options: `tls` (passed to
 * tls.connect: ca, cert, key, servername, rejectUnauthorized...).
 */
export async function connect(url, options = {}) {
  const parsed = new URL(url);
  switch (parsed.protocol) {
    case "ws:":
    case "wss:": {
      if (options.WebSocket !== undefined || globalThis.WebSocket !== undefined) return connectWebSocket(url, options);
      const { WebSocket } = await import("ws");
      return openWebSocket(url, WebSocket, options);
    }
    case "tcp:":
      return openSocket(url, () => net.connect({ host: host(parsed), port: port(parsed) }), "connect", options);
    case "tls:":
      return openSocket(url, () => tls.connect({ servername: parsed.hostname, ...options.tls,
        host: host(parsed), port: port(parsed) }), "secureConnect", options);
    case "unix:":
      if (!parsed.pathname) throw new TypeError(`a unix URL names a socket path: unix:///path, got ${url}`);
      return openSocket(url, () => net.connect({ path: decodeURIComponent(parsed.pathname) }), "connect", options);
    default:
      throw new TypeError(`cannot connect to ${url}: the schemes are ws, wss, tcp, tls and unix`);
  }
}

function host(url) {
  return url.hostname.replace(/^\[(.*)\]$/, "$1"); // [::1] -> ::1
}

function port(url) {
  if (!url.port) throw new TypeError(`${url.protocol}// needs a port: ${url.protocol}//host:port, got ${url.href}`);
  return Number(url.port);
}

function openSocket(url, open, event, options) {
  return new Promise((resolve, reject) => {
    const socket = open();
    const failed = (error) => reject(new ConnectionClosedError(`cannot connect to ${url}: ${error.message}`, error));
    socket.once("error", failed);
    socket.once(event, () => {
      socket.off("error", failed);
      socket.setNoDelay?.(true);
      resolve(new Connection(socketTransport(socket), options));
    });
  });
}

/** A connected net.Socket (or tls.TLSSocket) as a Connection's transport. */
export function socketTransport(socket) {
  let waiting = false;
  const transport = {
    onbytes: null,
    onend: null,
    ondrain: null,
    send(bytes) {
      if (!socket.destroyed && socket.writable) socket.write(bytes);
    },
    close() {
      if (socket.destroyed) return;
      socket.end(); // our goodbye is written first; the peer then closes its side (§10)
      setTimeout(() => socket.destroy(), END_TIMEOUT_MS).unref();
    },
    get writable() {
      return !socket.writableNeedDrain;
    },
    waitWritable() {
      if (waiting) return;
      waiting = true;
      socket.once("drain", () => {
        waiting = false;
        transport.ondrain?.();
      });
    },
  };
  socket.on("data", (chunk) => transport.onbytes?.(chunk));
  socket.on("close", () => transport.onend?.());
  socket.on("error", () => {}); // "close" follows
  return transport;
}
