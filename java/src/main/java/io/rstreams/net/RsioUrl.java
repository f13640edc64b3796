package io.rstreams.net;

import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * An RS.io endpoint address, read by the rules of PROTOCOL.md §1.1 as rstreams' parse_url and
 * the JavaScript binding's parseUrl read it (tests/net/url_refusals.json holds URLs with what
 * they parse to, and refused URLs with the message, the same in all three):
 * {@code tcp://host:port}, {@code tls://host:port} (port 0 when binding: any free port),
 * {@code ws://host[:port][/path][?query]}, {@code wss://...} (ports 80 and 443 by default;
 * {@code path} as written, "/" when absent; {@code query} empty or starting with '?', sent with
 * the path) or {@code unix:///absolute/path} (a Unix domain socket, its %XX escapes decoded;
 * {@code host} empty, {@code port} 0). The scheme is read in any case; the host is kept in
 * lower case, an IPv6 address without its brackets. A part the scheme has no use for (a user
 * before the host, a {@code tcp}/{@code tls} path, a query outside {@code ws}/{@code wss}, a
 * fragment) is refused by name, not dropped.
 */
record RsioUrl(String scheme, String host, int port, String path, String query) {
    private static final Map<String, String> FORMS = Map.of(
            "tcp", "tcp://host:port",
            "tls", "tls://host:port",
            "unix", "unix:///path",
            "ws", "ws://host:port/path?query",
            "wss", "wss://host:port/path?query");
    private static final Map<String, Integer> DEFAULT_PORTS = Map.of("ws", 80, "wss", 443); // RFC 6455 section 3
    private static final String SECTION = "(PROTOCOL.md §1.1)";
    private static final String ALL_FORMS = "use one of tcp://host:port, tls://host:port, unix:///path, "
            + "ws://host:port/path, wss://host:port/path " + SECTION;
    private static final Pattern SCHEME = Pattern.compile("[A-Za-z][A-Za-z0-9+.-]*"); // RFC 3986 section 3.1
    private static final Pattern HOST_NAME = Pattern.compile("[A-Za-z0-9._-]+");
    private static final Pattern IPV6 = Pattern.compile("[0-9A-Fa-f.]*:[0-9A-Fa-f:.]*");
    private static final Pattern PORT = Pattern.compile("[0-9]+");
    // what a ws/wss path and query hold as written: RFC 3986's pchar, '/' and '?' ('%' starts an
    // escape) but "'", which a WHATWG URL (the JavaScript binding's WebSockets, a browser's) sends
    // as %27 in a query
    private static final Pattern REQUEST_CHAR = Pattern.compile("[A-Za-z0-9._~!$&()*+,;=:@/?-]");
    private static final Pattern ESCAPE = Pattern.compile("%[0-9A-Fa-f]{2}");
    private static final String HOST_RULE = "a host is a name of ASCII letters, digits, '-', '.' and '_', "
            + "an IPv4 address, or an IPv6 address in brackets ([::1])";

    /** A URL split as RFC 3986 appendix B splits it; null for a part not there at all. */
    private record Parts(String scheme, String authority, String path, String query, String fragment, String shown) {
    }

    /**
     * Parses and checks {@code url} (PROTOCOL.md §1.1).
     *
     * @throws IllegalArgumentException naming the URL (its user part as ***), the part at fault
     *     and §1.1, in parse_url's words; for a null {@code url}, saying a URL is needed, as
     *     parse_url's TypeError for a URL that is not a str
     */
    static RsioUrl parse(String url) {
        if (url == null) {
            throw new IllegalArgumentException("an RS.io URL is a String such as 'tcp://127.0.0.1:5000', got null " + SECTION);
        }
        Parts parts = split(url);
        String shown = parts.shown();
        for (int i = 0; i < url.length(); i++) {
            char c = url.charAt(i);
            if (c < 0x20 || c == 0x7f) {
                throw new IllegalArgumentException(repr(shown) + " has a control character (" + repr(String.valueOf(c))
                        + "), which no part of a URL holds: write it percent-encoded (" + escape(c)
                        + ") where the part takes escapes " + SECTION);
            }
        }
        if (parts.scheme().isEmpty()) {
            throw new IllegalArgumentException("no URL scheme in " + repr(shown) + "; " + ALL_FORMS);
        }
        String scheme = parts.scheme().toLowerCase(Locale.ROOT);
        if (!FORMS.containsKey(scheme)) {
            throw new IllegalArgumentException("unsupported URL scheme " + repr(parts.scheme()) + " in " + repr(shown) + "; " + ALL_FORMS);
        }
        refuseExtraParts(scheme, parts);
        if (scheme.equals("unix")) {
            String written = (parts.authority() == null ? "" : parts.authority()) + parts.path();
            if (!written.startsWith("/")) {
                throw new IllegalArgumentException(repr(shown) + " has no absolute socket path: write it as unix:///path, like "
                        + "unix:///tmp/rs.sock " + SECTION);
            }
            return new RsioUrl(scheme, "", 0, decoded(shown, written), "");
        }
        String[] hostPort = hostPort(shown, scheme, parts.authority() == null ? "" : parts.authority());
        String portText = hostPort[1];
        int port;
        if (portText.isEmpty()) {
            Integer known = DEFAULT_PORTS.get(scheme);
            if (known == null) {
                throw new IllegalArgumentException(repr(shown) + " has no port: write it as " + scheme
                        + "://host:port, port 0 for any free one when listening " + SECTION);
            }
            port = known;
        } else {
            String digits = portText.replaceFirst("^0+(?=.)", "");
            if (!PORT.matcher(portText).matches() || digits.length() > 5 || Integer.parseInt(digits) > 65535) {
                throw new IllegalArgumentException(repr(shown) + " has an invalid port (" + repr(portText) + "): a port is 0 to 65535 " + SECTION);
            }
            port = Integer.parseInt(digits);
        }
        String path = "";
        String query = "";
        if (scheme.startsWith("ws")) {
            path = parts.path().isEmpty() ? "/" : parts.path();
            query = parts.query() == null || parts.query().isEmpty() ? "" : "?" + parts.query(); // no empty '?': none is sent
            checkRequestTarget(shown, path + query);
            refuseDotSegments(shown, parts.path());
        }
        return new RsioUrl(scheme, hostPort[0], port, path, query);
    }

    /**
     * {@code url}'s scheme (empty if none), authority, path, query and fragment (RFC 3986 appendix
     * B: the authority runs to the first '/', '?' or '#', the fragment follows the first '#', the
     * query the first '?' before it), and the URL for messages, its user part written ***.
     */
    private static Parts split(String url) {
        int colon = url.indexOf(':');
        String scheme = colon > 0 && SCHEME.matcher(url.substring(0, colon)).matches() ? url.substring(0, colon) : "";
        int at = scheme.isEmpty() ? 0 : scheme.length() + 1;
        String authority = null;
        String shown = url;
        if (url.startsWith("//", at)) {
            int end = url.length();
            for (char mark : new char[] {'/', '?', '#'}) {
                int found = url.indexOf(mark, at + 2);
                if (found >= 0 && found < end) {
                    end = found;
                }
            }
            authority = url.substring(at + 2, end);
            int userEnd = authority.lastIndexOf('@');
            if (userEnd >= 0) {
                shown = url.substring(0, at + 2) + "***@" + authority.substring(userEnd + 1) + url.substring(end);
            }
            at = end;
        }
        String rest = url.substring(at);
        String fragment = null;
        int hash = rest.indexOf('#');
        if (hash >= 0) {
            fragment = rest.substring(hash + 1);
            rest = rest.substring(0, hash);
        }
        String query = null;
        int mark = rest.indexOf('?');
        if (mark >= 0) {
            query = rest.substring(mark + 1);
            rest = rest.substring(0, mark);
        }
        return new Parts(scheme, authority, rest, query, fragment, shown);
    }

    /**
     * Refuses a part that {@code scheme} does not use, naming it and the scheme's form:
     * {@code tcp}/{@code tls} are host:port only, {@code unix} a socket path only,
     * {@code ws}/{@code wss} add a path and a query but no user and no fragment (RFC 6455 section 3).
     */
    private static void refuseExtraParts(String scheme, Parts parts) {
        boolean user = parts.authority() != null && parts.authority().indexOf('@') >= 0;
        boolean hostPort = scheme.equals("tcp") || scheme.equals("tls");
        String extra = "";
        if (user) {
            extra = "a user before the host (the part ending in '@')";
        } else if (hostPort && !parts.path().isEmpty()) {
            extra = "a path (" + repr(parts.path()) + ")";
        } else if ((hostPort || scheme.equals("unix")) && parts.query() != null) {
            extra = "a query (" + repr("?" + parts.query()) + ")";
        } else if (parts.fragment() != null) {
            extra = "a fragment (" + repr("#" + parts.fragment()) + ")";
        }
        if (extra.isEmpty()) {
            return;
        }
        String hint = "";
        if (!user && scheme.startsWith("ws")) {
            hint = ", a '#' in the path as %23";
        } else if (!user && scheme.equals("unix")) {
            hint = ", a '?' or '#' in the socket path as %3F or %23";
        }
        throw new IllegalArgumentException(repr(parts.shown()) + " has " + extra + ", which a " + scheme
                + ":// URL does not take: write it as " + FORMS.get(scheme) + hint + " " + SECTION);
    }

    /** The host (lower case, no brackets) and the port as written (empty if none) of {@code authority}. */
    private static String[] hostPort(String shown, String scheme, String authority) {
        if (authority.startsWith("[")) {
            int close = authority.indexOf(']');
            String after = close >= 0 ? authority.substring(close + 1) : "";
            if (close < 0 || (!after.isEmpty() && !after.startsWith(":")) || !IPV6.matcher(authority.substring(1, close)).matches()) {
                throw new IllegalArgumentException(repr(shown) + " has an invalid host (" + repr(authority) + "): " + HOST_RULE + " " + SECTION);
            }
            return new String[] {authority.substring(1, close).toLowerCase(Locale.ROOT), after.isEmpty() ? "" : after.substring(1)};
        }
        if (authority.indexOf(':') != authority.lastIndexOf(':')) {
            throw new IllegalArgumentException(repr(shown) + " has an invalid host (" + repr(authority) + "): " + HOST_RULE + " " + SECTION);
        }
        int colon = authority.indexOf(':');
        String host = colon < 0 ? authority : authority.substring(0, colon);
        if (host.isEmpty()) {
            throw new IllegalArgumentException(repr(shown) + " has no host: write it as " + FORMS.get(scheme) + ", like " + scheme
                    + "://127.0.0.1:5000 " + SECTION);
        }
        if (!HOST_NAME.matcher(host).matches()) {
            throw new IllegalArgumentException(repr(shown) + " has an invalid host (" + repr(host) + "): " + HOST_RULE + " " + SECTION);
        }
        return new String[] {host.toLowerCase(Locale.ROOT), colon < 0 ? "" : authority.substring(colon + 1)};
    }

    /** A unix socket path with its %XX escapes decoded (UTF-8). */
    private static String decoded(String shown, String written) {
        ByteBuffer bytes = ByteBuffer.allocate(written.length() * 4);
        int from = 0;
        for (int at = written.indexOf('%'); at >= 0; at = written.indexOf('%', from)) {
            if (!ESCAPE.matcher(written).region(at, written.length()).lookingAt()) {
                throw new IllegalArgumentException(repr(shown) + " has a '%' not followed by two hex digits in its socket path: "
                        + "write a '%' as %25 " + SECTION);
            }
            bytes.put(written.substring(from, at).getBytes(StandardCharsets.UTF_8));
            bytes.put((byte) Integer.parseInt(written.substring(at + 1, at + 3), 16));
            from = at + 3;
        }
        bytes.put(written.substring(from).getBytes(StandardCharsets.UTF_8)).flip();
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(bytes).toString();
        } catch (CharacterCodingException e) {
            throw new IllegalArgumentException(repr(shown) + " has a socket path that is not UTF-8 once its %XX escapes are decoded "
                    + SECTION, e);
        }
    }

    /** Refuses a character a ws/wss path or query must have percent-encoded (it is sent as written). */
    private static void checkRequestTarget(String shown, String target) {
        for (int at = 0; at < target.length(); at += Character.charCount(target.codePointAt(at))) {
            String c = new String(Character.toChars(target.codePointAt(at)));
            if (c.equals("%")) {
                if (!ESCAPE.matcher(target).region(at, target.length()).lookingAt()) {
                    throw new IllegalArgumentException(repr(shown) + " has a '%' not followed by two hex digits in its path or query: "
                            + "write a '%' as %25 " + SECTION);
                }
            } else if (!REQUEST_CHAR.matcher(c).matches()) {
                StringBuilder escaped = new StringBuilder();
                for (byte b : c.getBytes(StandardCharsets.UTF_8)) {
                    escaped.append(escape(b & 0xff));
                }
                throw new IllegalArgumentException(repr(shown) + " has a character its path or query may not hold as written ("
                        + repr(c) + "): write it percent-encoded (" + escaped + ") " + SECTION);
            }
        }
    }

    /**
     * Refuses a "." or ".." segment ("%2e" too) in a ws/wss path: a WHATWG URL removes it (RFC
     * 3986 section 5.2.4), so the JavaScript binding would send another path than written.
     */
    private static void refuseDotSegments(String shown, String path) {
        for (String segment : path.split("/", -1)) {
            String dots = segment.toLowerCase(Locale.ROOT).replace("%2e", ".");
            if (dots.equals(".") || dots.equals("..")) {
                throw new IllegalArgumentException(repr(shown) + " has a dot segment (" + repr(segment) + ") in its path, which a "
                        + "WebSocket client may remove (RFC 3986 section 5.2.4): write the path without it " + SECTION);
            }
        }
    }

    private static String escape(int octet) {
        return String.format(Locale.ROOT, "%%%02X", octet);
    }

    private static String repr(String text) {
        return PythonRepr.repr(text);
    }

    boolean unix() {
        return scheme.equals("unix");
    }

    /** Where to connect: the socket file, or the host (resolved when connecting) and port. */
    SocketAddress address() {
        return unix() ? Transport.unixAddress(path) : InetSocketAddress.createUnresolved(host, port);
    }

    boolean websocket() {
        return scheme.startsWith("ws");
    }

    boolean secure() {
        return scheme.equals("tls") || scheme.equals("wss");
    }

    /**
     * A WebSocket handshake's Host header (RFC 7230 section 5.4): the host, an IPv6 address in
     * brackets, and the port unless it is the scheme's default.
     */
    String hostHeader() {
        String h = host.contains(":") ? "[" + host + "]" : host;
        return port == DEFAULT_PORTS.getOrDefault(scheme, -1) ? h : h + ":" + port;
    }

    RsioUrl withPort(int newPort) {
        return new RsioUrl(scheme, host, newPort, path, query);
    }

    /**
     * The URL again, e.g. {@code tcp://[::1]:5000}, as parse_url's Endpoint.url writes it: a unix
     * socket path has its '%', '?', '#' and control characters percent-encoded.
     */
    @Override
    public String toString() {
        if (unix()) {
            StringBuilder out = new StringBuilder("unix://");
            for (int i = 0; i < path.length(); i++) {
                char c = path.charAt(i);
                out.append(c == '%' || c == '?' || c == '#' || c < 0x20 || c == 0x7f ? escape(c) : String.valueOf(c));
            }
            return out.toString();
        }
        String h = host.contains(":") ? "[" + host + "]" : host;
        return scheme + "://" + h + ":" + port + (websocket() ? path + query : "");
    }
}
