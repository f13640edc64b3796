package io.rstreams.net;

import java.net.URI;
import java.net.URISyntaxException;

/** An RS.io endpoint address: {@code tcp://host:port} (port 0 when binding: any free port). */
record RsioUrl(String scheme, String host, int port) {

    static RsioUrl parse(String url) {
        URI uri;
        try {
            uri = new URI(url);
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("not a URL: " + url + " (expected tcp://host:port)", e);
        }
        String scheme = uri.getScheme();
        if (!"tcp".equals(scheme)) {
            throw new IllegalArgumentException("unsupported scheme in " + url
                    + ": this binding speaks tcp://host:port (tls://, ws:// are not built yet)");
        }
        if (uri.getHost() == null || uri.getPort() < 0) {
            throw new IllegalArgumentException("a URL needs a host and a port: " + url + " (e.g. tcp://127.0.0.1:9000)");
        }
        return new RsioUrl(scheme, uri.getHost(), uri.getPort());
    }

    @Override
    public String toString() {
        String h = host.contains(":") ? "[" + host + "]" : host;
        return scheme + "://" + h + ":" + port;
    }
}
