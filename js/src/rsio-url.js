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
// (a zero-width space pasted into a URL shows). Which characters those are is the reference's
// table below (Python 3.11's Unicode data), not the runtime's: a character of a newer Unicode
// version is escaped, as Python 3.11 escapes it, in every browser and Node.
export function pythonRepr(text) {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let out = quote;
  for (const c of text) {
    const code = c.codePointAt(0);
    if (c === quote || c === "\\") out += `\\${c}`;
    else if (c === "\n") out += "\\n";
    else if (c === "\r") out += "\\r";
    else if (c === "\t") out += "\\t";
    else if (!printable(code)) {
      const [mark, width] = code < 0x100 ? ["x", 2] : code < 0x10000 ? ["u", 4] : ["U", 8];
      out += `\\${mark}${code.toString(16).padStart(width, "0")}`;
    } else out += c;
  }
  return out + quote;
}

// `x` (a number) as Python's format(x, "g") writes it, so a text naming a number (a goodbye's
// timeout) reads the same in every binding: 6 significant digits, rounded half to even from the
// number's exact value, trailing zeros dropped; 1e-05 to 999999 as a decimal, else with an
// exponent of at least two digits (1e+06, 1.5e-07); inf, -inf, nan.
export function pythonG(x) {
  if (Number.isNaN(x)) return "nan";
  const sign = x < 0 || Object.is(x, -0) ? "-" : "";
  if (!Number.isFinite(x)) return `${sign}inf`;
  let [digits, point] = exactDecimal(Math.abs(x)); // |x| = 0.DIGITS × 10^point
  if (digits === "") return `${sign}0`;
  if (digits.length > 6) {
    const [kept, rest] = [BigInt(digits.slice(0, 6)), digits.slice(6)];
    const up = rest[0] > "5" || (rest[0] === "5" && (/[1-9]/.test(rest.slice(1)) || kept % 2n === 1n));
    digits = String(up ? kept + 1n : kept);
    if (digits.length > 6) point += 1; // 999999.5: 1000000
  }
  digits = digits.slice(0, 6).replace(/0+$/, "");
  const exponent = point - 1; // |x| = D.DDDDD × 10^exponent
  if (exponent < -4 || exponent >= 6) {
    const mantissa = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${mantissa}e${exponent < 0 ? "-" : "+"}${String(Math.abs(exponent)).padStart(2, "0")}`;
  }
  if (exponent < 0) return `${sign}0.${"0".repeat(-exponent - 1)}${digits}`;
  const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, "0");
  return `${sign}${whole}${digits.length > exponent + 1 ? `.${digits.slice(exponent + 1)}` : ""}`;
}

/** A finite `x` > 0 exactly, as [DIGITS (no leading or trailing zero), point]: x = 0.DIGITS × 10^point. */
function exactDecimal(x) {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  const biased = Number(bits >> 52n);
  const fraction = bits & ((1n << 52n) - 1n);
  const mantissa = biased === 0 ? fraction : fraction | (1n << 52n);
  const power = (biased === 0 ? 1 : biased) - 1075; // x = mantissa × 2^power
  if (mantissa === 0n) return ["", 0];
  // x = mantissa × 5^-power / 10^-power when power < 0
  const digits = String(power >= 0 ? mantissa << BigInt(power) : mantissa * 5n ** BigInt(-power));
  const point = digits.length - Math.max(0, -power);
  return [digits.replace(/0+$/, ""), point];
}

let starts = null; // the first code point of each run of PRINTABLE_RUNS, decoded on first use

/** Whether Python's repr() prints code point `code` as it is (its str.isprintable()). */
function printable(code) {
  if (code >= 0x20 && code < 0x7f) return true;
  if (starts === null) {
    const runs = PRINTABLE_RUNS.split(",");
    starts = new Uint32Array(runs.length);
    for (let i = 1; i < runs.length; i++) starts[i] = starts[i - 1] + parseInt(runs[i - 1], 36);
  }
  let low = 0; // the last run starting at or before `code`, by bisection
  let high = starts.length - 1;
  while (low < high) {
    const middle = (low + high + 1) >> 1;
    if (starts[middle] <= code) low = middle;
    else high = middle - 1;
  }
  return low % 2 === 1; // runs alternate, the first one escaped
}

// BEGIN python-printable (written by scripts/python_printable.py from Python 3.11; do not edit)
// The lengths, in base 36, of the alternating runs of code points from 0 that Python's repr()
// escapes and prints as they are (str.isprintable(), Unicode 14.0.0), first an escaped one.
export const PRINTABLE_UNICODE = "14.0.0";
const PRINTABLE_RUNS = ""
  + "w,2n,y,c,1,ju,2,6,4,7,1,1,1,k,1,b1,1,12,2,1e,2,3,1,1j,8,r,4,6,h,m,1,5c,1,1c,2,1n,2,2t,e,1n,2,1d,2,f,"
  + "1,s,2,1,1,b,5,v,9,22,1,4h,1,8,2,2,2,m,1,7,1,1,3,4,2,9,2,2,2,4,8,1,4,2,1,5,2,p,2,3,1,6,4,2,2,m,1,7,1,"
  + "2,1,2,1,2,2,1,1,5,4,2,2,3,3,1,7,4,1,1,7,h,a,3,1,9,1,3,1,m,1,7,1,2,1,5,2,a,1,3,1,3,2,1,f,4,2,c,7,7,1,"
  + "3,1,8,2,2,2,m,1,7,1,2,1,5,2,9,2,2,2,3,7,3,4,2,1,5,2,i,a,2,1,6,3,3,1,4,3,2,1,1,1,2,3,2,3,3,3,c,4,5,3,"
  + "3,1,4,2,1,6,1,e,l,5,d,1,3,1,n,1,g,2,9,1,3,1,4,7,2,1,3,2,1,2,4,2,a,7,m,1,3,1,n,1,a,1,5,2,9,1,3,1,4,7,"
  + "2,6,2,1,4,2,a,1,2,d,d,1,3,1,1f,1,3,1,6,4,g,2,q,1,3,1,i,3,o,1,9,1,1,2,7,3,1,4,6,1,1,1,8,6,a,2,3,c,1m,"
  + "4,t,11,2,1,1,1,5,1,o,1,1,1,n,2,5,1,1,1,6,2,a,2,4,w,20,1,10,4,13,1,10,1,f,1,d,11,5i,1,1,5,1,2,ah,1,4,"
  + "2,7,1,1,1,4,2,15,1,4,2,x,1,4,2,7,1,1,1,4,2,f,1,1l,1,4,2,1v,2,w,3,q,6,2e,2,6,2,hs,1,s,3,2h,7,m,9,o,9,"
  + "k,c,d,1,3,1,2,c,2m,2,a,6,a,6,e,1,b,6,2h,7,17,5,1y,a,v,1,c,4,c,4,1,3,16,2,5,b,18,4,q,6,b,3,1q,2,1t,1,"
  + "t,2,b,6,a,6,e,2,v,1d,25,3,1b,1,38,8,1o,3,f,3,1o,7,17,2,b,8,17,5,eu,2,6,2,12,2,6,2,8,1,1,1,1,1,1,1,v,"
  + "2,1h,1,f,1,e,2,6,1,j,2,3,1,9,h,o,8,1b,h,2,2,r,1,d,3,x,f,x,f,3w,4,if,p,b,l,1ec,2,w,1,9p,5,19,1,1,5,1,"
  + "2,1k,7,2,e,o,9,7,1,7,1,7,1,7,1,7,1,7,1,7,1,7,1,3i,y,q,1,2h,c,5y,q,c,5,1r,1,2e,2,2v,5,17,1,2m,1,2c,c,"
  + "1b,1,mlp,3,1j,9,9o,k,54,8,5n,5,2,1,1,1,5,o,1n,3,a,6,1k,8,1y,8,c,6,38,b,u,3,26,1,b,4,x,1,1j,9,e,2,a,"
  + "2,2v,o,s,a,6,2,6,2,6,9,7,1,7,1,1o,4,3i,2,a,6,8mc,c,n,4,1d,6is,a6,2,2y,12,7,c,5,5,q,1,5,1,1,1,2,1,2,"
  + "1,3h,g,cd,2,1i,7,1,w,16,6,1f,1,j,1,4,4,5,1,3r,4,5a,3,6,2,6,2,6,2,3,3,7,1,7,d,2,2,c,1,q,1,j,1,2,1,f,"
  + "2,e,y,3f,5,3,4,19,3,2g,1,d,3,1,1b,1a,3m,t,3,1d,f,s,4,10,9,u,5,17,5,u,1,11,4,e,16,4e,2,a,6,10,4,10,4,"
  + "14,8,1g,b,c,1,f,1,7,1,2,1,b,1,f,1,7,1,2,1v,8n,9,m,a,8,o,6,1,16,1,9,1x,6,2,1,1,18,1,2,3,1,2,n,1,20,8,"
  + "9,1c,j,1,2,5,x,3,r,5,1,1s,1k,4,k,2,1e,1,2,5,8,1,3,1,t,2,3,4,a,7,9,7,1s,w,13,4,c,9,1i,3,t,2,r,5,q,7,"
  + "4,c,7,28,21,1j,1f,d,1f,7,1a,8,a,86,v,1,16,1,3,2,2,26,14,8,16,m,q,12,s,k,n,9,26,4,10,9,1q,1,5,d,p,7,"
  + "a,6,1h,1,i,8,13,9,2o,1,k,b,i,1,18,1t,7,1,1,1,4,1,f,1,b,6,1n,5,a,6,4,1,8,2,2,2,m,1,7,1,2,1,5,1,a,2,2,"
  + "2,3,2,1,6,1,5,7,2,7,3,5,3v,2k,1,5,u,20,8,a,4m,1i,2,12,y,1x,b,a,6,d,j,1m,6,a,1i,r,2,f,4,n,55,1o,2s,"
  + "2b,c,8,2,1,2,8,1,2,1,u,1,2,2,c,9,a,1y,8,2,1a,2,b,r,20,8,2b,d,21,7b,9,1,19,1,e,a,t,3,w,2,m,1,e,21,7,"
  + "1,2,1,18,3,1,1,2,1,9,8,a,6,6,1,2,1,11,1,2,1,6,7,a,8m,p,53,1,f,1e,d,pn,2u,33,1,5,b,5g,218,2r,d,tr,"
  + "34h,g7,6nt,ft,7,v,1,a,4,29,1,a,6,u,2,6,a,1y,a,a,1,7,1,l,5,j,j4,2j,2t,23,4,1l,7,h,1s,5,b,2,e,4qg,8,"
  + "ye,16,9,6w7,4,1,7,1,2,1,83,19,3,h,4,8,b0,1s4,2z,5,d,3,9,7,a,2,4,3mo,1a,2,n,9,38,1o,6u,a,13,2,22,8,"
  + "34,l,1y,4a,k,c,2f,9,p,3r,2d,1,1z,1,2,2,1,2,2,2,4,1,c,1,1,1,7,1,1t,1,4,2,8,1,7,1,s,1,4,1,5,1,1,3,7,1,"
  + "9g,2,84,2,ji,f,5,1,f,uo,v,69,7,1,h,2,7,1,2,1,5,5x,19,3,e,2,a,4,2,8w,v,h,1m,5,1,yo,7,1,4,1,2,1,f,1,"
  + "5h,2,g,15,24,4,a,4,2,lt,1w,24,1p,5e,4,1,r,1,2,1,1,2,1,1,a,1,4,1,1,1,1,6,1,4,1,1,1,1,1,1,3,1,2,1,1,2,"
  + "1,1,1,1,1,1,1,1,1,1,2,1,1,2,4,1,7,1,4,1,4,1,1,1,a,1,h,5,3,1,5,1,h,1g,2,7i,18,4,2s,c,f,2,f,1,f,1,11,"
  + "a,4u,1k,t,d,18,4,9,7,2,e,6,4a,rc,5,g,3,d,3,38,c,2h,7,c,4,1,f,c,4,1k,8,a,6,14,8,u,2,2,26,9g,c,e,2,5,"
  + "3,5,3,7,9,t,3,b,5,6,a,a,6,8,8,7,9,43,1,1j,11,a,sm,wyo,w,37d,7,66,2,4g2,e,5rl,2e7,f2,15u,3t7,fcmt,6o,"
  + "47bk";
// END python-printable
