package io.rstreams.net;

import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * An RS.io endpoint address: {@code tcp://host:port}, {@code tls://host:port},
 * {@code ws://host:port/path?query}, {@code wss://host:port/path?query} (port 0 when binding: any
 * free port; {@code query} is empty or starts with '?', and a client sends it with the path) or {@code unix:///absolute/path} (a Unix domain socket; {@code host} empty, {@code port} 0).
 * A part the scheme has no use for (a user before the host, a {@code tcp}/{@code tls} path, a
 * query outside {@code ws}/{@code wss}, a fragment) is refused by name, not dropped, in the words
 * of rstreams' parse_url (tests/net/url_refusals.json holds both).
 */
record RsioUrl(String scheme, String host, int port, String path, String query) {
    private static final Set<String> SCHEMES = Set.of("tcp", "tls", "ws", "wss", "unix");
    private static final Map<String, String> FORMS = Map.of(
            "tcp", "tcp://host:port",
            "tls", "tls://host:port",
            "unix", "unix:///path",
            "ws", "ws://host:port/path?query",
            "wss", "wss://host:port/path?query");

    static RsioUrl parse(String url) {
        int colon = url.indexOf(':');
        if (colon > 0) {
            String named = url.substring(0, colon).toLowerCase(Locale.ROOT);
            if (SCHEMES.contains(named)) {
                refuseExtraParts(url, named, url.substring(colon + 1));
            }
        }
        URI uri;
        try {
            uri = new URI(url);
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("not a URL: " + url + " (expected tcp://host:port)", e);
        }
        // a scheme is case-insensitive (RFC 3986 section 3.1), as rstreams' parse_url reads it
        String scheme = uri.getScheme() == null ? null : uri.getScheme().toLowerCase(Locale.ROOT);
        if (scheme == null || !SCHEMES.contains(scheme)) {
            throw new IllegalArgumentException("unsupported scheme in " + url
                    + ": use tcp://host:port, tls://host:port, unix:///path, ws://host:port/path or wss://host:port/path");
        }
        if (scheme.equals("unix")) {
            String socket = (uri.getRawAuthority() == null ? "" : uri.getRawAuthority()) + (uri.getPath() == null ? "" : uri.getPath());
            if (!socket.startsWith("/")) {
                throw new IllegalArgumentException("a unix URL needs an absolute socket path, like unix:///tmp/rs.sock, got " + url);
            }
            return new RsioUrl(scheme, "", 0, socket, "");
        }
        if (uri.getHost() == null || uri.getPort() < 0) {
            throw new IllegalArgumentException("a URL needs a host and a port: " + url + " (e.g. tcp://127.0.0.1:9000)");
        }
        String path = uri.getRawPath() == null || uri.getRawPath().isEmpty() ? "/" : uri.getRawPath();
        // a ws/wss query is sent in the HTTP request, as the path is (RFC 6455 section 3)
        String query = uri.getRawQuery() == null ? "" : "?" + uri.getRawQuery();
        // URI keeps an IPv6 address in its brackets; the host is kept without them, in lower case
        // (RFC 3986 section 3.2.2), as parse_url keeps it: toString() adds them back
        String host = uri.getHost().replaceAll("^\\[(.*)\\]$", "$1").toLowerCase(Locale.ROOT);
        return new RsioUrl(scheme, host, uri.getPort(), path, query);
    }

    /**
     * Refuses a part of {@code url} that {@code scheme} does not use, naming it and the scheme's
     * form: {@code tcp}/{@code tls} are host:port only, {@code unix} a socket path only,
     * {@code ws}/{@code wss} add a path and a query but no user and no fragment (RFC 6455 section
     * 3). The URL is split as a generic URL (RFC 3986 section 3: authority up to the first '/',
     * '?' or '#'; fragment after the first '#'; query after the first '?' before it); a user part
     * is shown as {@code ***}: it may hold a password.
     */
    private static void refuseExtraParts(String url, String scheme, String rest) {
        String netloc = "";
        if (rest.startsWith("//")) {
            int end = rest.length();
            for (char c : new char[] {'/', '?', '#'}) {
                int at = rest.indexOf(c, 2);
                if (at >= 0 && at < end) {
                    end = at;
                }
            }
            netloc = rest.substring(2, end);
            rest = rest.substring(end);
        }
        String fragment = null;
        int hash = rest.indexOf('#');
        if (hash >= 0) {
            fragment = rest.substring(hash + 1);
            rest = rest.substring(0, hash);
        }
        String query = "";
        int mark = rest.indexOf('?');
        if (mark >= 0) {
            query = rest.substring(mark + 1);
            rest = rest.substring(0, mark);
        }
        String path = rest;
        int userEnd = netloc.lastIndexOf('@');
        boolean user = userEnd >= 0;
        int netlocAt = url.indexOf(netloc);
        String shown = user ? url.substring(0, netlocAt) + "***@" + netloc.substring(userEnd + 1)
                + url.substring(netlocAt + netloc.length()) : url;
        boolean hostPort = scheme.equals("tcp") || scheme.equals("tls");
        String extra = "";
        if (user) {
            extra = "a user before the host (the part ending in '@')";
        } else if (hostPort && !path.isEmpty()) {
            extra = "a path (" + pythonRepr(path) + ")";
        } else if ((hostPort || scheme.equals("unix")) && mark >= 0) { // a '?' after the '#' is the fragment's
            extra = "a query (" + pythonRepr("?" + query) + ")";
        } else if (fragment != null) {
            extra = "a fragment (" + pythonRepr("#" + fragment) + ")";
        }
        if (extra.isEmpty()) {
            return;
        }
        String hint = "";
        if (!user && scheme.startsWith("ws")) {
            hint = " (a '#' in the path is written %23)";
        } else if (!user && scheme.equals("unix")) {
            hint = " (a socket path with '?' or '#' in it cannot be written as a unix URL)";
        }
        throw new IllegalArgumentException(pythonRepr(shown) + " has " + extra + ", which a " + scheme
                + ":// URL does not take: write it as " + FORMS.get(scheme) + hint);
    }

    /**
     * {@code text} quoted as Python's repr() quotes a str, so a refusal reads the same in every
     * binding: single quotes unless it holds a ' and no ", backslashes and control characters
     * escaped.
     */
    private static String pythonRepr(String text) {
        char quote = text.indexOf('\'') >= 0 && text.indexOf('"') < 0 ? '"' : '\'';
        StringBuilder out = new StringBuilder().append(quote);
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == quote || c == '\\') {
                out.append('\\').append(c);
            } else if (c == '\n') {
                out.append("\\n");
            } else if (c == '\r') {
                out.append("\\r");
            } else if (c == '\t') {
                out.append("\\t");
            } else if (c < 0x20 || (c >= 0x7f && c <= 0xa0)) {
                out.append(String.format(Locale.ROOT, "\\x%02x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append(quote).toString();
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

    RsioUrl withPort(int newPort) {
        return new RsioUrl(scheme, host, newPort, path, query);
    }

    @Override
    public String toString() {
        if (unix()) {
            return "unix://" + path;
        }
        String h = host.contains(":") ? "[" + host + "]" : host;
        return scheme + "://" + h + ":" + port + (websocket() ? path + query : "");
    }
}
