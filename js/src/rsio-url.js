// RS.io URLs, read by the rules of PROTOCOL.md §1.1 as rstreams' parse_url and Java's RsioUrl
// read them: tests/net/url_refusals.json holds URLs with what they parse to, and refused URLs
// with the message, byte for byte the same in all three. The scheme is read in any case; the
// host is kept in lower case, an IPv6 address without its brackets. A part the scheme has no
// use for is refused by name rather than dropped (tcp://host:5000?tls=1 does not quietly mean
// tcp://host:5000): tcp:// and tls:// are host:port only, unix:// a socket path only (its %XX
// escapes decoded), ws:// and wss:// add a path and a query (sent as written) but no user and
// no fragment (RFC 6455 section 3; a '#' in a path is %23).

const FORMS = Object.freeze({
  tcp: "tcp://host:port",
  tls: "tls://host:port",
  unix: "unix:///path",
  ws: "ws://host:port/path?query",
  wss: "wss://host:port/path?query",
});
const DEFAULT_PORTS = Object.freeze({ ws: 80, wss: 443 }); // RFC 6455 section 3
const SECTION = "(PROTOCOL.md §1.1)";
const ALL_FORMS = "use one of tcp://host:port, tls://host:port, unix:///path, ws://host:port/path, "
  + `wss://host:port/path ${SECTION}`;
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*$/; // RFC 3986 section 3.1
const HOST_NAME = /^[A-Za-z0-9._-]+$/;
const IPV6 = /^[0-9A-Fa-f.]*:[0-9A-Fa-f:.]*$/;
const PORT = /^[0-9]+$/;
// what a ws/wss path and query hold as written: RFC 3986's pchar, '/' and '?' ('%' starts an
// escape) but "'", which a WHATWG URL (this binding's WebSockets, a browser's) sends as %27 in a
// query
const REQUEST_CHAR = /^[A-Za-z0-9._~!$&()*+,;=:@/?-]$/;
const ESCAPE = /^%[0-9A-Fa-f]{2}/;
const HOST_RULE = "a host is a name of ASCII letters, digits, '-', '.' and '_', an IPv4 address, or an IPv6 "
  + "address in brackets ([::1])";

/**
 * Parses and checks an RS.io URL (PROTOCOL.md §1.1): {scheme, host, port, path, url}, `host` in
 * lower case without brackets ("" for unix), `port` 0 for unix, `path` the socket path for unix
 * and the path with the query for ws/wss ("" for tcp/tls), `url` the URL written back as
 * rstreams' Endpoint.url writes it. Throws a TypeError naming the URL (its user part as ***),
 * the part at fault and §1.1, in parse_url's words.
 */
export function parseUrl(url) {
  const text = String(url);
  const parts = split(text);
  const { shown } = parts;
  for (const c of text) {
    const code = c.codePointAt(0);
    if (code < 0x20 || code === 0x7f) {
      throw new TypeError(`${pythonRepr(shown)} has a control character (${pythonRepr(c)}), which no part of a URL `
        + `holds: write it percent-encoded (${escape(code)}) where the part takes escapes ${SECTION}`);
    }
  }
  if (!parts.scheme) throw new TypeError(`no URL scheme in ${pythonRepr(shown)}; ${ALL_FORMS}`);
  const scheme = parts.scheme.toLowerCase();
  if (!Object.hasOwn(FORMS, scheme)) {
    throw new TypeError(`unsupported URL scheme ${pythonRepr(parts.scheme)} in ${pythonRepr(shown)}; ${ALL_FORMS}`);
  }
  refuse(scheme, parts);
  if (scheme === "unix") {
    const written = (parts.authority ?? "") + parts.path;
    if (!written.startsWith("/")) {
      throw new TypeError(`${pythonRepr(shown)} has no absolute socket path: write it as unix:///path, like `
        + `unix:///tmp/rs.sock ${SECTION}`);
    }
    return endpoint("unix", "", 0, decoded(shown, written));
  }
  const [host, portText] = hostPort(shown, scheme, parts.authority ?? "");
  let port;
  if (!portText) {
    port = DEFAULT_PORTS[scheme];
    if (port === undefined) {
      throw new TypeError(`${pythonRepr(shown)} has no port: write it as ${scheme}://host:port, port 0 for any free `
        + `one when listening ${SECTION}`);
    }
  } else if (!PORT.test(portText) || BigInt(portText) > 65535n) {
    throw new TypeError(`${pythonRepr(shown)} has an invalid port (${pythonRepr(portText)}): a port is 0 to 65535 `
      + SECTION);
  } else {
    port = Number(portText);
  }
  let path = "";
  if (scheme === "ws" || scheme === "wss") {
    path = (parts.path || "/") + (parts.query ? `?${parts.query}` : ""); // no empty '?': none is sent
    checkRequestTarget(shown, path);
    refuseDotSegments(shown, parts.path);
  }
  return endpoint(scheme, host, port, path);
}

/**
 * Throws parseUrl's TypeError if `url`, of one of the RS.io schemes, has a part its scheme does
 * not take (a user, a tcp/tls path, a query outside ws/wss, a fragment); a URL of another scheme
 * is left to the caller.
 */
export function refuseExtraParts(url) {
  const parts = split(String(url));
  const scheme = parts.scheme.toLowerCase();
  if (Object.hasOwn(FORMS, scheme)) refuse(scheme, parts);
}

function endpoint(scheme, host, port, path) {
  let url;
  if (scheme === "unix") {
    url = `unix://${[...path].map((c) => (/^[%?#\x00-\x1f\x7f]$/.test(c) ? escape(c.codePointAt(0)) : c)).join("")}`;
  } else {
    url = `${scheme}://${host.includes(":") ? `[${host}]` : host}:${port}${scheme.startsWith("ws") ? path : ""}`;
  }
  return Object.freeze({ scheme, host, port, path, url });
}

// `url`'s scheme ("" if none), authority, path, query and fragment (null: not there at all),
// split as RFC 3986 appendix B splits it: the authority runs to the first '/', '?' or '#', the
// fragment follows the first '#', the query the first '?' before it; and `shown`, the URL for
// messages with its user part written ***
function split(url) {
  const colon = url.indexOf(":");
  const scheme = colon > 0 && SCHEME.test(url.slice(0, colon)) ? url.slice(0, colon) : "";
  let at = scheme ? scheme.length + 1 : 0;
  let authority = null;
  let shown = url;
  if (url.startsWith("//", at)) {
    const ends = ["/", "?", "#"].map((c) => url.indexOf(c, at + 2)).filter((found) => found >= 0);
    const end = ends.length ? Math.min(...ends) : url.length;
    authority = url.slice(at + 2, end);
    const userEnd = authority.lastIndexOf("@");
    if (userEnd >= 0) shown = `${url.slice(0, at + 2)}***@${authority.slice(userEnd + 1)}${url.slice(end)}`;
    at = end;
  }
  let rest = url.slice(at);
  const hash = rest.indexOf("#");
  const fragment = hash < 0 ? null : rest.slice(hash + 1);
  if (hash >= 0) rest = rest.slice(0, hash);
  const mark = rest.indexOf("?");
  const query = mark < 0 ? null : rest.slice(mark + 1);
  const path = mark < 0 ? rest : rest.slice(0, mark);
  return { scheme, authority, path, query, fragment, shown };
}

function refuse(scheme, { authority, path, query, fragment, shown }) {
  const user = authority !== null && authority.includes("@");
  const hostPortOnly = scheme === "tcp" || scheme === "tls";
  let extra = "";
  if (user) extra = "a user before the host (the part ending in '@')";
  else if (hostPortOnly && path) extra = `a path (${pythonRepr(path)})`;
  else if ((hostPortOnly || scheme === "unix") && query !== null) extra = `a query (${pythonRepr(`?${query}`)})`;
  else if (fragment !== null) extra = `a fragment (${pythonRepr(`#${fragment}`)})`;
  if (!extra) return;
  let hint = "";
  if (!user && scheme.startsWith("ws")) hint = ", a '#' in the path as %23";
  else if (!user && scheme === "unix") hint = ", a '?' or '#' in the socket path as %3F or %23";
  throw new TypeError(`${pythonRepr(shown)} has ${extra}, which a ${scheme}:// URL does not take: `
    + `write it as ${FORMS[scheme]}${hint} ${SECTION}`);
}

// the host (lower case, no brackets) and the port as written ("" if none) of `authority`
function hostPort(shown, scheme, authority) {
  const invalid = (what) => new TypeError(`${pythonRepr(shown)} has an invalid host (${pythonRepr(what)}): `
    + `${HOST_RULE} ${SECTION}`);
  if (authority.startsWith("[")) {
    const close = authority.indexOf("]");
    const after = close >= 0 ? authority.slice(close + 1) : "";
    if (close < 0 || (after && !after.startsWith(":")) || !IPV6.test(authority.slice(1, close))) {
      throw invalid(authority);
    }
    return [authority.slice(1, close).toLowerCase(), after.slice(1)];
  }
  if (authority.indexOf(":") !== authority.lastIndexOf(":")) throw invalid(authority);
  const colon = authority.indexOf(":");
  const host = colon < 0 ? authority : authority.slice(0, colon);
  if (!host) {
    throw new TypeError(`${pythonRepr(shown)} has no host: write it as ${FORMS[scheme]}, like `
      + `${scheme}://127.0.0.1:5000 ${SECTION}`);
  }
  if (!HOST_NAME.test(host)) throw invalid(host);
  return [host.toLowerCase(), colon < 0 ? "" : authority.slice(colon + 1)];
}

// a unix socket path with its %XX escapes decoded (UTF-8)
function decoded(shown, written) {
  const bytes = [];
  const encoder = new TextEncoder();
  let from = 0;
  for (let at = written.indexOf("%"); at >= 0; at = written.indexOf("%", from)) {
    if (!ESCAPE.test(written.slice(at))) {
      throw new TypeError(`${pythonRepr(shown)} has a '%' not followed by two hex digits in its socket path: `
        + `write a '%' as %25 ${SECTION}`);
    }
    bytes.push(...encoder.encode(written.slice(from, at)), parseInt(written.slice(at + 1, at + 3), 16));
    from = at + 3;
  }
  bytes.push(...encoder.encode(written.slice(from)));
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(new Uint8Array(bytes));
  } catch {
    throw new TypeError(`${pythonRepr(shown)} has a socket path that is not UTF-8 once its %XX escapes are decoded `
      + SECTION);
  }
}

// refuses a character a ws/wss path or query must have percent-encoded (it is sent as written)
function checkRequestTarget(shown, target) {
  let at = 0;
  for (const c of target) {
    if (c === "%") {
      if (!ESCAPE.test(target.slice(at))) {
        throw new TypeError(`${pythonRepr(shown)} has a '%' not followed by two hex digits in its path or query: `
          + `write a '%' as %25 ${SECTION}`);
      }
    } else if (!REQUEST_CHAR.test(c)) {
      const escaped = [...new TextEncoder().encode(c)].map(escape).join("");
      throw new TypeError(`${pythonRepr(shown)} has a character its path or query may not hold as written `
        + `(${pythonRepr(c)}): write it percent-encoded (${escaped}) ${SECTION}`);
    }
    at += c.length;
  }
}

// refuses a "." or ".." segment ("%2e" too) in a ws/wss path: a WHATWG URL removes it (RFC 3986
// section 5.2.4), so this binding's WebSockets would send another path than written
function refuseDotSegments(shown, path) {
  for (const segment of path.split("/")) {
    if ([".", ".."].includes(segment.toLowerCase().replaceAll("%2e", "."))) {
      throw new TypeError(`${pythonRepr(shown)} has a dot segment (${pythonRepr(segment)}) in its path, which a `
        + `WebSocket client may remove (RFC 3986 section 5.2.4): write the path without it ${SECTION}`);
    }
  }
}

function escape(octet) {
  return `%${octet.toString(16).toUpperCase().padStart(2, "0")}`;
}

// `text` quoted as Python's repr() quotes a str, so a refusal reads the same in every binding:
// single quotes unless it holds a ' and no ", backslashes escaped, and characters Python does not
// print (Unicode's Other and Separator categories, but the space) as \xNN, \uNNNN or \UNNNNNNNN
// (a zero-width space pasted into a URL shows)
function pythonRepr(text) {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let out = quote;
  for (const c of text) {
    const code = c.codePointAt(0);
    if (c === quote || c === "\\") out += `\\${c}`;
    else if (c === "\n") out += "\\n";
    else if (c === "\r") out += "\\r";
    else if (c === "\t") out += "\\t";
    else if (c !== " " && /^[\p{C}\p{Z}]$/u.test(c)) {
      const [mark, width] = code < 0x100 ? ["x", 2] : code < 0x10000 ? ["u", 4] : ["U", 8];
      out += `\\${mark}${code.toString(16).padStart(width, "0")}`;
    } else out += c;
  }
  return out + quote;
}
