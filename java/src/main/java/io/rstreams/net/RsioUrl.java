package io.rstreams.net;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Set;

/**
 * An RS.io endpoint address: {@code tcp://host:port}, {@code tls://host:port},
 * {@code ws://host:port/path} or {@code wss://host:port/path} (port 0 when binding: any free port).
 */
record RsioUrl(String scheme, String host, int port, String path) {
    private static final Set<String> SCHEMES = Set.of("tcp", "tls", "ws", "wss");

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
                    + ": this binding speaks tcp://, tls://, ws:// and wss:// (unix:// and pipes are Python-only)");
        }
        if (uri.getHost() == null || uri.getPort() < 0) {
            throw new IllegalArgumentException("a URL needs a host and a port: " + url + " (e.g. tcp://127.0.0.1:9000)");
        }
        String path = uri.getRawPath() == null || uri.getRawPath().isEmpty() ? "/" : uri.getRawPath();
        return new RsioUrl(scheme, uri.getHost(), uri.getPort(), path);
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
        String h = host.contains(":") ? "[" + host + "]" : host;
        return scheme + "://" + h + ":" + port + (websocket() ? path : "");
    }
}
