// Which browser pages listen()'s WebSocket server accepts (Node only), as rstreams' Python
// servers do (docs/security.md). A browser lets any page open a WebSocket to any address,
// loopback included, and names the page in the handshake's Origin header (RFC 6454:
// scheme://host[:port], the default port left out); a server that does not check it serves
// every page the user has open (cross-site WebSocket hijacking). A handshake is accepted
// without Origin (Node, Python and Java clients send none), from the server's own origin, or
// from one listen(url, {origins}) allows ("*": every page); the rest get HTTP 403.

export const ALL_ORIGINS = "*";

const LOOPBACK = ["localhost", "127.0.0.1", "::1"];
const WILDCARD = ["", "0.0.0.0", "::"];
const DEFAULT_PORT = { http: 80, https: 443 };

/** A serialized origin as browsers send it: brackets for IPv6, no default port. */
function serialized(scheme, host, port) {
  const name = host.includes(":") ? `[${host}]` : host;
  return port === DEFAULT_PORT[scheme] ? `${scheme}://${name}` : `${scheme}://${name}:${port}`;
}

/**
 * The origins of pages served at host:port itself (https when `secure`): the host as given
 * and, for a loopback or wildcard host, every loopback name a browser on this machine may
 * have opened the page by.
 */
export function ownOrigins(host, port, { secure = false } = {}) {
  const scheme = secure ? "https" : "http";
  const given = host.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  const hosts = [given];
  if (LOOPBACK.includes(given) || WILDCARD.includes(given)) hosts.push(...LOOPBACK.filter((name) => name !== given));
  return hosts.filter((name) => name !== "").map((name) => serialized(scheme, name, port));
}

function checkOrigin(origin) {
  if (typeof origin !== "string") {
    throw new TypeError(`origins: an origin is a string such as "https://app.example:8443", got ${String(origin)}`);
  }
  if (origin === ALL_ORIGINS) return origin;
  let url = null;
  try {
    url = new URL(origin);
  } catch {
    // reported below
  }
  let problem = null;
  if (/\s/.test(origin)) {
    problem = "an origin has no spaces";
  } else if (url === null || !Object.hasOwn(DEFAULT_PORT, url.protocol.slice(0, -1)) || !url.hostname || !/^https?:\/\//i.test(origin)) {
    problem = "it needs http:// or https:// and a host";
  } else if (url.username || url.password || /^https?:\/\/[^/?#]*@/i.test(origin)) {
    problem = "an origin has no user name or password";
  } else if (url.pathname !== "/" || url.search || url.hash || /[?#]/.test(origin)) {
    problem = "an origin has no path, query or fragment";
  }
  if (problem !== null) {
    throw new RangeError(`origins: origin ${JSON.stringify(origin)}: ${problem} (an origin is SCHEME://HOST[:PORT], `
      + `e.g. "https://app.example:8443", as a page's address begins; "${ALL_ORIGINS}": every one)`);
  }
  return url.origin; // lower case, no default port, as browsers send it
}

/**
 * listen()'s `origins`, checked and in the form browsers send (lower case, no default port):
 * the pages, besides the server's own, that may connect; null when it holds "*" (every page).
 */
export function checkOrigins(origins) {
  if (origins === undefined || origins === null) return [];
  if (typeof origins === "string" || typeof origins[Symbol.iterator] !== "function") {
    throw new TypeError(`origins must be a list of origins such as ["https://app.example"], got ${JSON.stringify(origins)}`);
  }
  const checked = [...origins].map(checkOrigin);
  return checked.includes(ALL_ORIGINS) ? null : checked;
}

/**
 * The `ws` package's verifyClient for a server whose own origins `own()` gives (known once it
 * listens) and that allows `more` besides (checkOrigins(); null: every page): no Origin, one of
 * those, or a 403 whose body says how to allow it. Each refusal goes to `report(error)` too,
 * naming the origin and the option: the page cannot read the 403's body, a browser shows it
 * only a failed WebSocket.
 */
export function originCheck(own, more, report) {
  let allowed = null;
  return ({ origin }, verified) => {
    if (more === null || origin === undefined) return verified(true);
    allowed ??= new Set([...own(), ...more]);
    if (allowed.has(origin)) return verified(true);
    const allow = `to allow it, listen with {origins: [${JSON.stringify(origin)}]}`;
    report(new Error(`refused a WebSocket handshake from a page at origin ${origin} (HTTP 403); ${allow}`));
    const body = `a page at origin ${origin} may not connect to this RS.io server (only its own origin may); ${allow}\n`;
    return verified(false, 403, body, { "Content-Type": "text/plain; charset=utf-8" });
  };
}
