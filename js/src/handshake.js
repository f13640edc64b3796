// Which WebSocket handshakes listen()'s ws:// server answers with 101 (Node only), as rstreams'
// Python and Java servers do (PROTOCOL.md §1). Each refusal is an HTTP answer, before any
// WebSocket frame, with a plain-text body saying what was wrong, checked in this order:
//   - a path other than the server's: 404 `RS.io is served at /path`;
//   - a request that is not a GET asking for an upgrade to WebSocket (plain HTTP, as curl or a
//     browser's address bar sends: Node's HTTP server hands it to plainRequest; another method or
//     another upgrade, as `Upgrade: h2c`: onlyWebSocketUpgrades hands it there before the `ws`
//     package's checks): 426 with `Upgrade: websocket`, naming the path, rsio.v0 and §1;
//   - a browser page from an origin not allowed: 403 (origins.js);
//   - no offer of the subprotocol rsio.v0: 400 naming it, §1 and what was offered.
// An offer of rsio.v0 among others is accepted, and the `ws` package's handleProtocols then
// selects rsio.v0 in the 101.

import { SUBPROTOCOL } from "./rsio.js";

const PLAIN_TEXT = { "Content-Type": "text/plain; charset=utf-8" };

/** The subprotocols a handshake offers, in its order (the `ws` package has checked the header's syntax). */
function offered(request) {
  const header = request.headers["sec-websocket-protocol"];
  return header === undefined ? [] : header.split(",").map((name) => name.trim()).filter((name) => name !== "");
}

/** The body of the 400 answering a handshake that offers `names` and not rsio.v0. */
export function missingSubprotocol(names) {
  const offer = names.length === 0 ? "none" : names.join(", ");
  return `RS.io needs the WebSocket subprotocol ${SUBPROTOCOL} (PROTOCOL.md §1); the handshake offered ${offer}\n`;
}

/** The body of the 426 answering a request at `path` that is not a GET asking for an upgrade to WebSocket. */
export function notUpgraded(path) {
  return `RS.io is served at ${path} over WebSocket with the subprotocol ${SUBPROTOCOL} (PROTOCOL.md §1); `
    + "this request is not a GET asking for an upgrade to WebSocket\n";
}

/**
 * The request listener of the HTTP server under listen()'s `ws` server at `path`: Node gives it
 * the requests that ask for no upgrade (the others go to the `ws` package's handshake). 404 at
 * another path, as a handshake there; 426 at the path, with the protocol to upgrade to (RFC 9110
 * §15.5.22). Either closes the connection, as every refusal does.
 */
export function plainRequest(path) {
  return (request, response) => {
    const url = request.url ?? "/";
    const query = url.indexOf("?");
    const [status, body, more] = (query === -1 ? url : url.slice(0, query)) !== path
      ? [404, `RS.io is served at ${path}\n`, {}] : [426, notUpgraded(path), { Upgrade: "websocket" }];
    const bytes = Buffer.from(body, "utf8");
    response.writeHead(status, { ...PLAIN_TEXT, ...more, "Content-Length": bytes.length, Connection: "close" });
    response.end(bytes);
  };
}

/**
 * Makes the `ws` server `wss` hand an upgrade request that is not a GET asking for WebSocket
 * (another method, or another protocol such as `Upgrade: h2c`) to `plain` (a plainRequest), as
 * Node's HTTP server hands it the requests asking for no upgrade: answered 426 (404 at another
 * path), as rstreams' Python and Java servers do, instead of the `ws` package's 405 or 400. The
 * answer is written by Node's own ServerResponse on the request's socket, which then closes.
 */
export function onlyWebSocketUpgrades(wss, plain, ServerResponse) {
  const handle = wss.handleUpgrade.bind(wss);
  wss.handleUpgrade = (request, socket, head, done) => {
    if (request.method === "GET" && (request.headers.upgrade ?? "").toLowerCase() === "websocket") {
      return handle(request, socket, head, done);
    }
    const response = new ServerResponse(request);
    response.assignSocket(socket);
    response.on("finish", () => {
      response.detachSocket(socket);
      socket.end();
    });
    return plain(request, response);
  };
}

/**
 * The `ws` package's verifyClient for a server at `path` whose Origin check is `origins` (a
 * verifyClient of origins.js): the path, then the origin, then the subprotocol.
 */
export function handshakeCheck(path, origins) {
  return (info, verified) => {
    const url = info.req.url ?? "/";
    const query = url.indexOf("?");
    if ((query === -1 ? url : url.slice(0, query)) !== path) {
      return verified(false, 404, `RS.io is served at ${path}\n`, PLAIN_TEXT);
    }
    return origins(info, (ok, ...refusal) => {
      if (!ok) return verified(ok, ...refusal);
      const names = offered(info.req);
      if (names.includes(SUBPROTOCOL)) return verified(true);
      return verified(false, 400, missingSubprotocol(names), PLAIN_TEXT);
    });
  };
}
