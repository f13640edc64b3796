package io.rstreams.net;

import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.Set;

/**
 * An RS.io endpoint address: {@code tcp://host:port}, {@code tls://host:port},
 * {@code ws://host:port/path}, {@code wss://host:port/path} (port 0 when binding: any free port)
 * or {@code unix:///absolute/path} (a Unix domain socket; {@code host} empty, {@code port} 0).
 */
record RsioUrl(String scheme, String host, int port, String path) {
    private static final Set<String> SCHEMES = Set.of("tcp", "tls", "ws", "wss", "unix");

    static RsioUrl parse(String url) {
        URI uri;
        try {
            uri = new URI(url);
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("not a URL: " + url + " (expected tcp://host:port)", e);
        }
        String scheme = uri.getScheme();
        if (scheme == null || !SCHEMES.contains(scheme)) {
            throw new IllegalArgumentException("unsupported scheme in " + url
                    + ": use tcp://host:port, tls://host:port, unix:///path, ws://host:port/path or wss://host:port/path");
        }
        if (scheme.equals("unix")) {
            String socket = (uri.getRawAuthority() == null ? "" : uri.getRawAuthority()) + (uri.getPath() == null ? "" : uri.getPath());
            if (!socket.startsWith("/")) {
                throw new IllegalArgumentException("a unix URL needs an absolute socket path, like unix:///tmp/rs.sock, got " + url);
            }
            return new RsioUrl(scheme, "", 0, socket);
        }
        if (uri.getHost() == null || uri.getPort() < 0) {
            throw new IllegalArgumentException("a URL needs a host and a port: " + url + " (e.g. tcp://127.0.0.1:9000)");
        }
        String path = uri.getRawPath() == null || uri.getRawPath().isEmpty() ? "/" : uri.getRawPath();
        return new RsioUrl(scheme, uri.getHost(), uri.getPort(), path);
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
        return new RsioUrl(scheme, host, newPort, path);
    }

    @Override
    public String toString() {
        if (unix()) {
            return "unix://" + path;
        }
        String h = host.contains(":") ? "[" + host + "]" : host;
        return scheme + "://" + h + ":" + port + (websocket() ? path : "");
    }
}
