// The package's Node entry: everything of rsio.js, with a connect() that also opens
// tcp://host:port, tls://host:port and unix:///path (a net.Socket, PROTOCOL.md §1), and
// ws:// / wss:// on every Node from 20 on; and listen(), which accepts connections on
// tcp://, unix:// and ws:// and serves publishers to them.
//
// WebSocket under Node: Node 22 has a global WebSocket; Node 20 has one only behind
// --experimental-websocket. Where there is none, connect() loads the `ws` package (this
// package's one dependency: small, no dependencies of its own, the WebSocket most Node
// servers and clients use). It is imported only when a ws:// URL is opened without a
// global WebSocket, so TCP users and browsers never load it.

import net from "node:net";
import tls from "node:tls";

import { AuthGate } from "./gate.js";
import { handshakeCheck, onlyWebSocketUpgrades, plainRequest } from "./handshake.js";
import { checkOrigins, originCheck, ownOrigins } from "./origins.js";
import { SYSTEM_CLOCK, ServerSession, Sessions, serverResumeOptions } from "./sessions.js";
import { parseUrl, pythonG } from "./rsio-url.js";
import {
  CLOSE_TIMEOUT_MS, Connection, ConnectionClosedError, ERROR_CODES, SUBPROTOCOL, connect as connectWebSocket,
  connectTransport, holdUntilStarted, openWebSocket, webSocketTransport,
} from "./rsio.js";

export * from "./rsio.js";

// the lingering close (§9.1, §10): after our end(), how long the peer has to close its side,
// and how much of its input is discarded meanwhile, before the socket is destroyed (a peer
// still writing is reset), as rstreams' LINGER_SECONDS and LINGER_BYTES: a peer flooding
// after our goodbye is not read for all of LINGER_MS
const LINGER_MS = 2000;
const LINGER_BYTES = 4 * 1024 * 1024;

// the `ws` package's WebSockets (listen()'s, and connect()'s where Node has no global one):
// a message above 1 MiB is refused with close status 1009 and no goodbye, and no message is
// compressed (PROTOCOL.md §1), as rstreams does
const WS_OPTIONS = Object.freeze({ maxPayload: 1024 * 1024, perMessageDeflate: false });

// The close reasons of the `ws` package's WebSockets when they fail a connection for what the
// peer sent (§1): the package closes with the status alone, rstreams' reasons say what was wrong
// and cite §1 (a message of any number of frames is read up to 1 MiB here: 1009 names no frames)
const WS_FAULT_REASONS = Object.freeze({
  1002: "bytes that are not a valid WebSocket frame (PROTOCOL.md §1)",
  1007: "a text WebSocket message, or a close reason, that is not UTF-8 (PROTOCOL.md §1)",
  1009: "a WebSocket message above 1 MiB (PROTOCOL.md §1)",
});

/**
 * The `ws` package's WebSocket class `WS` closing with WS_FAULT_REASONS' reason where the package
 * fails the connection (it calls close(status) with no reason only then: its answer to the
 * peer's close passes that close's reason, and ours always name one).
 */
function faultReasons(WS) {
  return class extends WS {
    close(code, data) {
      super.close(code, data === undefined && this.readyState === WS.OPEN ? WS_FAULT_REASONS[code] : data);
    }
  };
}

/**
 * Open a connection: ws://, wss://, tcp://host:port, tls://host:port, unix:///path. Resolves
 * once the transport is open and our clientHello is sent. Node-only options: `tls` (passed to
 * tls.connect, and to the `ws` package's WebSocket for wss://: ca, cert, key, servername...).
 */
export async function connect(url, options = {}) {
  const parsed = parseUrl(url); // PROTOCOL.md §1.1, as rstreams' parse_url reads it
  switch (parsed.scheme) {
    case "ws":
    case "wss": {
      if (options.WebSocket !== undefined || globalThis.WebSocket !== undefined) return connectWebSocket(url, options);
      const WebSocket = faultReasons((await import("ws")).WebSocket);
      // the `ws` package bounds what it reads (status 1009 above 1 MiB) and compresses nothing (§1);
      // wss:// runs over a TCP socket of our own, which can be reset (§9.1) where TLS cannot
      const own = parsed.scheme === "wss" ? { createConnection: tlsOverOwnTcp } : {};
      return openWebSocket(url, WebSocket, { ...options, tls: { ...WS_OPTIONS, ...own, ...options.tls },
        _tcpUnder: (socket) => tcpUnder.get(socket) ?? socket });
    }
    case "tcp": {
      const where = { host: parsed.host, port: parsed.port, allowHalfOpen: true };
      return connectTransport(() => openSocket(url, () => net.connect(where), "connect", options), options);
    }
    case "tls": {
      const name = parsed.host; // SNI names a host, never an address (RFC 6066)
      const where = { ...(net.isIP(name) ? {} : { servername: name }), ...options.tls, host: name, port: parsed.port };
      // over a TCP socket of our own, which can be reset (§9.1) where the TLS socket cannot
      return connectTransport(() => openSocket(url, () => tlsOverOwnTcp(where), "secureConnect", options), options);
    }
    case "unix": {
      const open = () => net.connect({ path: parsed.path, allowHalfOpen: true });
      return connectTransport(() => openSocket(url, open, "connect", options), options);
    }
    default: // parseUrl takes no other scheme
      throw new TypeError(`cannot connect to ${url}: the schemes are ws, wss, tcp, tls and unix`);
  }
}

/**
 * A promise of a connected socket's transport; a connect or TLS handshake not done within
 * handshakeTimeout seconds is given up (then the serverHello has as long again).
 */
function openSocket(url, open, event, { clock = SYSTEM_CLOCK, handshakeTimeout = DEFAULT_HANDSHAKE_TIMEOUT_S }) {
  return new Promise((resolve, reject) => {
    const socket = open();
    const timer = handshakeTimeout === null ? null : clock.setTimeout(() => {
      socket.off("error", failed);
      socket.on("error", () => {});
      socket.destroy();
      reject(new ConnectionClosedError(`cannot connect to ${url}: not connected within ${pythonG(handshakeTimeout)} s `
        + "(handshakeTimeout)"));
    }, handshakeTimeout * 1000);
    const failed = (error) => {
      clock.clearTimeout(timer);
      reject(new ConnectionClosedError(`cannot connect to ${url}: ${error.message}`, error));
    };
    socket.once("error", failed);
    socket.once(event, () => {
      clock.clearTimeout(timer);
      socket.off("error", failed);
      socket.setNoDelay?.(true);
      resolve(socketTransport(socket, clock));
    });
  });
}

/**
 * A connected net.Socket (or tls.TLSSocket) as a Connection's transport; `clock` ({setTimeout,
 * clearTimeout}, the Connection's) times its lingering close.
 */
export function socketTransport(socket, clock = SYSTEM_CLOCK) {
  let waiting = false;
  let discarded = null; // bytes read after close(): null until then
  const transport = {
    onbytes: null,
    onend: null,
    ondrain: null,
    send(bytes) {
      if (!socket.destroyed && socket.writable) socket.write(bytes);
    },
    close() {
      if (socket.destroyed || discarded !== null) return;
      discarded = 0;
      socket.end(); // our goodbye is written first; the peer then closes its side (§10)
      const linger = clock.setTimeout(() => cut(socket), LINGER_MS);
      socket.once("close", () => clock.clearTimeout(linger));
    },
    abort() {
      cut(socket);
    },
    get writable() {
      return !socket.writableNeedDrain;
    },
    get unsent() {
      return socket.writableLength;
    },
    pauseReading() {
      socket.pause();
    },
    resumeReading() {
      if (!socket.destroyed) socket.resume();
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
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    deliver("onend");
  };
  socket.on("data", (chunk) => {
    if (discarded === null) {
      deliver("onbytes", chunk);
    } else if ((discarded += chunk.length) > LINGER_BYTES) {
      cut(socket); // §10's linger ends: the peer had enough time to read the goodbye
    }
  });
  socket.on("end", end); // the peer's end of input: with allowHalfOpen we may still answer (§10)
  socket.on("close", end);
  socket.on("error", () => {}); // "close" follows
  return transport;
}

// a TLS socket of connect() -> the TCP socket it runs over
const tcpUnder = new WeakMap();

/**
 * tls.connect(`options`) over a TCP socket opened here (kept in tcpUnder); as the `ws` package's
 * createConnection too, whose `path` is the URL's (not a Unix socket's) and whose SNI is the host
 * unless it is an address.
 */
function tlsOverOwnTcp({ path, ...options }) {
  const tcp = net.connect({ host: options.host, port: options.port });
  const sni = net.isIP(options.host) ? {} : { servername: options.host };
  const socket = tls.connect({ ...sni, ...options, socket: tcp });
  tcpUnder.set(socket, tcp);
  return socket;
}

/**
 * Destroy `socket` at the end of its linger or on an abort. With output still queued in it (a
 * peer that stopped reading) a TCP socket is reset instead (resetAndDestroy()): a destroy would
 * let the kernel send what it holds and then an end of input, which the peer would read as all
 * there was of a stream cut anywhere, even inside a frame. A TLS socket is reset through the TCP
 * socket under it (its own handle is not TCP); a Unix socket has no reset: it is destroyed.
 */
function cut(socket) {
  if (socket.writableLength > 0 && !socket.destroyed) {
    try {
      (tcpUnder.get(socket) ?? socket).resetAndDestroy();
    } catch {
      // not a TCP handle (Unix): destroyed below
    }
  }
  socket.destroy();
}

const DEFAULT_IDLE_TIMEOUT_S = 60; // as rstreams servers: a peer silent this long is closed (§14.2)
const DEFAULT_HANDSHAKE_TIMEOUT_S = 10; // as rstreams servers: for the clientHello, then for auth (§15.3)
const DEFAULT_MAX_CONNECTIONS = 10000; // as rstreams servers' max_connections

/**
 * Accept RS.io connections on `url` (tcp://host:port, unix:///path, ws://host:port/path; port
 * 0: any free one) and serve `options.publishers` to them; every connection is a full
 * Connection (it may subscribe to the client's publishers too: `options.onconnection(conn)`).
 * Extensions, each offered to clients that offer it (an older client keeps the behaviour it
 * had): content types (§17: a publisher made with withContentType() states its type),
 * metadata (§18: a publisher or channel factory gets the subscribe's entries as its last
 * argument, `authorize` as its third), error codes (§19: refusals carry their code; a factory
 * or `authorize` that throws an error with a numeric `code` refuses with that code and the
 * error's message), messages (§20: `options.handlers`), channels (§21: `options.channels`,
 * names or "{field}" patterns -> factories (input, params, path, connection, metadata)
 * returning the output Publisher; input elements may come split, §21.6) and, with
 * `options.resume` (true or {sessionTimeout, bufferBytes, stallTimeout, ackDelay}: times in
 * ms, unlike the connection's timeouts below, which are in seconds; bufferBytes in bytes),
 * resumption (§16; sessions.js). With
 * `authenticate(credentials) -> principal | null` (and `authorize(principal, name,
 * metadata)`, `authRequired`, default true) it offers extension auth (§15; gate.js). It
 * closes a connection idle for `options.idleTimeout` seconds (default 60; null: never,
 * PROTOCOL.md §14.2); on a resumable session the transport is dropped instead and the
 * session waits for its resume. A connection whose clientHello has not come within
 * `options.handshakeTimeout` seconds (default 10; null: never) is said goodbye `handshake
 * timeout (no clientHello within N s)`, and with authenticate one whose authenticate is not
 * settled within as long of the hello `authentication timeout (not settled within N s of the
 * hello) (PROTOCOL.md §15.3)`, the latter with error code 11 (timeout) when error codes were
 * agreed (the former comes before the hellos, so it carries none, §19.1), as rstreams servers. A ws://
 * server answers a handshake at another path with HTTP 404, a request that is not a GET asking
 * for an upgrade to WebSocket (plain HTTP, a POST, `Upgrade: h2c`) with 426, and a handshake
 * that does not offer the subprotocol rsio.v0 with HTTP 400 (PROTOCOL.md §1; handshake.js); it accepts a browser
 * page (a handshake with an Origin header) only from its own origin (http://host:port; for a
 * loopback or wildcard host every loopback name) or one of
 * `options.origins` (["https://app.example:8443"]; "*": every page), others get HTTP 403
 * (origins.js), each refusal reported to `options.onerror` (default: one line on
 * console.error) naming the origin and the option; clients sending no Origin (Node, Python,
 * Java) are accepted. At most `options.maxConnections` connections are open at once (default
 * 10 000, as rstreams servers' max_connections; with resume, sessions), counted from the accept
 * (with resume: from the first byte showing a new session) until each is over; one beyond it
 * is said goodbye `too many connections: this server accepts at most N (maxConnections)` at its
 * clientHello, with error code 8 (unavailable) when the hello offers error-codes (PROTOCOL.md
 * §10), is not passed to onconnection, and nothing it sent after the hello is served.
 * Resolves with {url, connections, close()} once listening; close() says goodbye `server
 * closing` to every connection, with error code 0 (normal), as rstreams servers; with resume
 * also to each transport whose first byte has not come (no code: no hello yet, §19.1).
 */
export async function listen(url, options = {}) {
  if (options.auth != null) {
    throw new TypeError("listen() takes no auth credentials: authenticate clients with options.authenticate "
      + "(and authorize)");
  }
  const { authenticate, authorize, authRequired = true, resume, origins, maxConnections = DEFAULT_MAX_CONNECTIONS,
    ...rest } = options;
  if (!Number.isInteger(maxConnections) || maxConnections < 1) {
    throw new RangeError(`maxConnections must be an integer >= 1, got ${maxConnections}`);
  }
  const moreOrigins = checkOrigins(origins); // checked for every scheme, used by ws://
  if (authenticate === undefined && authorize !== undefined) {
    throw new TypeError("authorize needs authenticate too: listen(url, {authenticate, authorize})");
  }
  const gate = () => (authenticate === undefined ? null
    : new AuthGate({ authenticate, authorize, required: authRequired }));
  gate(); // the hooks are checked now, not at the first connection
  const clock = options.clock ?? SYSTEM_CLOCK;
  const sessions = resume ? new Sessions(serverResumeOptions(resume), clock) : null;
  const parsed = parseUrl(url); // PROTOCOL.md §1.1, as rstreams' parse_url reads it
  const connections = new Set();
  const refused = new Set(); // beyond maxConnections: said goodbye at their hello, not announced
  const undecided = new Set(); // with resume: transports whose first byte has not come (§16.3)
  const connectionOptions = { idleTimeout: DEFAULT_IDLE_TIMEOUT_S, handshakeTimeout: DEFAULT_HANDSHAKE_TIMEOUT_S,
    ...rest, role: "server" };
  Connection._checkOptions(connectionOptions); // now: a throw at an accept would end the process
  const open = (transport) => {
    const conn = new Connection(transport, { ...connectionOptions, gate: gate() });
    const announce = () => {
      if (connections.size >= maxConnections) {
        conn._refuseAtHello(`too many connections: this server accepts at most ${maxConnections} (maxConnections)`,
          ERROR_CODES.UNAVAILABLE);
        refused.add(conn);
        conn.closed.then(() => refused.delete(conn));
        return;
      }
      connections.add(conn);
      conn.closed.then(() => connections.delete(conn));
      try {
        options.onconnection?.(conn);
      } catch (error) {
        conn._report(error);
      }
    };
    if (transport instanceof ServerSession) {
      undecided.add(conn);
      conn.closed.then(() => undecided.delete(conn));
      transport.onadmit = () => { // once its first byte shows it is not a resume (§16.3)
        undecided.delete(conn);
        announce();
      };
      transport.onabandon = () => {
        undecided.delete(conn);
        conn._abandon();
      };
    } else {
      announce();
    }
  };
  const accept = (link) => open(sessions === null ? link : sessions.session(link));
  let stop;
  let where;
  if (parsed.scheme === "tcp" || parsed.scheme === "unix") {
    const server = net.createServer({ allowHalfOpen: true }, (socket) => {
      socket.setNoDelay(true);
      accept(socketTransport(socket, clock));
    });
    const address = parsed.scheme === "tcp" ? { host: parsed.host, port: parsed.port } : { path: parsed.path };
    await new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(address, () => { server.off("error", reject); resolve(); });
    });
    const bound = server.address();
    where = typeof bound === "string" ? parsed.url : `tcp://${hostText(bound.address)}:${bound.port}`;
    stop = () => new Promise((resolve) => { server.close(() => resolve()); });
  } else if (parsed.scheme === "ws") {
    const { WebSocket, WebSocketServer } = await import("ws");
    const http = await import("node:http");
    const path = parsed.path.split("?", 1)[0]; // the path served at; a query is a client's
    // a refused page is reported as connections report theirs: to onerror, else one line on stderr
    const refused = (error) => {
      try {
        (options.onerror ?? ((e) => console.error("rsio:", e.message)))(error);
      } catch {
        // an error handler that throws has nowhere left to report to
      }
    };
    // the path (404), plain HTTP (426), browser pages: its own origin (known once bound) and
    // those allowed (403), the subprotocol (400): refused at the HTTP handshake, before any
    // WebSocket frame (§1); Node's HTTP server hands plain requests to plainRequest, and
    // onlyWebSocketUpgrades the upgrades that are not a GET for WebSocket
    const plain = plainRequest(path);
    // a peer that opens the socket and sends its HTTP request slowly, or never (slow loris), is
    // closed (HTTP 408) once handshakeTimeout passes, as Python's and Java's servers bound their
    // WebSocket handshakes, instead of holding a socket for Node's default of 60 s
    const handshakeMs = connectionOptions.handshakeTimeout == null ? null : connectionOptions.handshakeTimeout * 1000;
    const httpServer = http.createServer(handshakeMs === null ? {} : {
      headersTimeout: handshakeMs, requestTimeout: handshakeMs, connectionsCheckingInterval: Math.min(1000, handshakeMs),
    }, plain);
    const pages = originCheck(() => ownOrigins(parsed.host, httpServer.address().port), moreOrigins, refused);
    const wss = new WebSocketServer({
      ...WS_OPTIONS,
      WebSocket: faultReasons(WebSocket),
      server: httpServer,
      handleProtocols: (protocols) => (protocols.has(SUBPROTOCOL) ? SUBPROTOCOL : false),
      verifyClient: handshakeCheck(path, pages),
    });
    onlyWebSocketUpgrades(wss, plain, http.ServerResponse); // a POST or Upgrade: h2c: 426 too
    await new Promise((resolve, reject) => {
      httpServer.once("error", reject);
      httpServer.listen(parsed.port, parsed.host, () => { httpServer.off("error", reject); resolve(); });
    });
    // the upgrade's socket is the WebSocket's: reset when it is ended with output unsent (§9.1)
    wss.on("connection", (ws, request) => accept(webSocketTransport(ws, clock, request.socket)));
    const bound = httpServer.address();
    where = `ws://${hostText(bound.address)}:${bound.port}${path}`;
    // the `ws` server closes once its clients have; the HTTP server under it, once its sockets have
    stop = () => new Promise((resolve) => { wss.close(() => httpServer.close(() => resolve())); });
  } else {
    throw new TypeError(`cannot listen on ${url}: the schemes are tcp, unix and ws`);
  }
  let closing = null;
  const shutDown = async (reason) => {
    const stopped = stop(); // accepts no more; settles once every accepted transport has closed
    const all = [...connections, ...refused, ...undecided];
    for (const conn of all) conn.close(reason);
    let timer;
    const late = new Promise((resolve) => { timer = clock.setTimeout(() => resolve(true), CLOSE_TIMEOUT_MS); });
    if (await Promise.race([stopped.then(() => false), late])) {
      for (const conn of all) conn._abort(); // still answering or lingering when the time is up
      await stopped;
    }
    clock.clearTimeout(timer);
  };
  return {
    url: where,
    connections,
    sessions,
    /**
     * Goodbye to every connection at once, then stop listening: each waits for its answer and
     * lingers as a Connection's close() does, and whatever is still open CLOSE_TIMEOUT_MS (5 s)
     * after the call is aborted, as rstreams servers' close (CLOSE_TIMEOUT). Idempotent.
     */
    close(reason = "server closing") {
      closing ??= shutDown(reason);
      return closing;
    },
  };
}

function hostText(address) {
  return address.includes(":") ? `[${address}]` : address;
}
