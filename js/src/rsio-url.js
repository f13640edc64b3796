// A part of an RS.io URL that its scheme has no use for is refused by name rather than dropped
// (tcp://host:5000?tls=1 does not quietly mean tcp://host:5000), in the words of rstreams'
// parse_url and Java's RsioUrl (tests/net/url_refusals.json holds them): tcp:// and tls:// are
// host:port only, unix:// a socket path only, ws:// and wss:// add a path and a query but no
// user and no fragment (RFC 6455 section 3; a '#' in a path is %23).

const FORMS = Object.freeze({
  tcp: "tcp://host:port",
  tls: "tls://host:port",
  unix: "unix:///path",
  ws: "ws://host:port/path?query",
  wss: "wss://host:port/path?query",
});

/**
 * Throws a TypeError naming the part of `url` its scheme does not take, if any; a URL of
 * another scheme is left to the caller. The URL is split as a generic URL (RFC 3986 section 3:
 * the authority ends at the first '/', '?' or '#'; the fragment follows the first '#', the query
 * the first '?' before it); a user part is shown as *** (it may hold a password).
 */
export function refuseExtraParts(url) {
  const text = String(url);
  const colon = text.indexOf(":");
  const scheme = colon > 0 ? text.slice(0, colon).toLowerCase() : "";
  if (!Object.hasOwn(FORMS, scheme)) return;
  let rest = text.slice(colon + 1);
  let netloc = "";
  if (rest.startsWith("//")) {
    const ends = ["/", "?", "#"].map((c) => rest.indexOf(c, 2)).filter((at) => at >= 0);
    const end = ends.length ? Math.min(...ends) : rest.length;
    netloc = rest.slice(2, end);
    rest = rest.slice(end);
  }
  const hash = rest.indexOf("#");
  const fragment = hash < 0 ? null : rest.slice(hash + 1);
  if (hash >= 0) rest = rest.slice(0, hash);
  const mark = rest.indexOf("?");
  const query = mark < 0 ? "" : rest.slice(mark + 1);
  const path = mark < 0 ? rest : rest.slice(0, mark);
  const userEnd = netloc.lastIndexOf("@");
  const user = userEnd >= 0;
  const netlocAt = text.indexOf(netloc);
  const shown = user
    ? text.slice(0, netlocAt) + "***@" + netloc.slice(userEnd + 1) + text.slice(netlocAt + netloc.length) : text;
  const hostPort = scheme === "tcp" || scheme === "tls";
  let extra = "";
  if (user) extra = "a user before the host (the part ending in '@')";
  else if (hostPort && path) extra = `a path (${pythonRepr(path)})`;
  else if ((hostPort || scheme === "unix") && mark >= 0) extra = `a query (${pythonRepr(`?${query}`)})`;
  else if (fragment !== null) extra = `a fragment (${pythonRepr(`#${fragment}`)})`;
  if (!extra) return;
  let hint = "";
  if (!user && scheme.startsWith("ws")) hint = " (a '#' in the path is written %23)";
  else if (!user && scheme === "unix") hint = " (a socket path with '?' or '#' in it cannot be written as a unix URL)";
  throw new TypeError(`${pythonRepr(shown)} has ${extra}, which a ${scheme}:// URL does not take: `
    + `write it as ${FORMS[scheme]}${hint}`);
}

// `text` quoted as Python's repr() quotes a str, so a refusal reads the same in every binding:
// single quotes unless it holds a ' and no ", backslashes and control characters escaped
function pythonRepr(text) {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let out = quote;
  for (const c of text) {
    const code = c.codePointAt(0);
    if (c === quote || c === "\\") out += `\\${c}`;
    else if (c === "\n") out += "\\n";
    else if (c === "\r") out += "\\r";
    else if (c === "\t") out += "\\t";
    else if (code < 0x20 || (code >= 0x7f && code <= 0xa0)) out += `\\x${code.toString(16).padStart(2, "0")}`;
    else out += c;
  }
  return out + quote;
}
