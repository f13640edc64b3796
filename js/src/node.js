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

import {
  ConnectionClosedError, connect as connectWebSocket, connectTransport, holdUntilStarted, openWebSocket,
} from "./rsio.js";

export * from "./rsio.js";

const END_TIMEOUT_MS = 2000; // after our end(), how long the peer has to close its side

/**
 * Open a connection: ws://, wss://, tcp://host:port, tls://host:port, unix:///path. Resolves
 * once the transport is open and our clientHello is sent. Node-only options: `tls` (passed to
 * tls.connect, and to the `ws` package's WebSocket for wss://: ca, cert, key, servername...).
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
    case "tcp:": {
      const where = { host: host(parsed), port: port(parsed) };
      return connectTransport(() => openSocket(url, () => net.connect(where), "connect"), options);
    }
    case "tls:": {
      const name = host(parsed); // SNI names a host, never an address (RFC 6066)
      const where = { ...(net.isIP(name) ? {} : { servername: name }), ...options.tls, host: name, port: port(parsed) };
      return connectTransport(() => openSocket(url, () => tls.connect(where), "secureConnect"), options);
    }
    case "unix:": {
      if (!parsed.pathname) throw new TypeError(`a unix URL names a socket path: unix:///path, got ${url}`);
      const path = decodeURIComponent(parsed.pathname);
      return connectTransport(() => openSocket(url, () => net.connect({ path }), "connect"), options);
    }
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

/** A promise of a connected socket's transport. */
function openSocket(url, open, event) {
  return new Promise((resolve, reject) => {
    const socket = open();
    const failed = (error) => reject(new ConnectionClosedError(`cannot connect to ${url}: ${error.message}`, error));
    socket.once("error", failed);
    socket.once(event, () => {
      socket.off("error", failed);
      socket.setNoDelay?.(true);
      resolve(socketTransport(socket));
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
  const deliver = holdUntilStarted(transport);
  socket.on("data", (chunk) => deliver("onbytes", chunk));
  socket.on("close", () => deliver("onend"));
  socket.on("error", () => {}); // "close" follows
  return transport;
}
