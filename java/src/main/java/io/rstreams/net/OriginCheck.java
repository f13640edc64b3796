package io.rstreams.net;

import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Which browser pages a {@code ws://} or {@code wss://} server accepts, as rstreams' Python and
 * JavaScript servers do (docs/security.md). A browser lets any page open a WebSocket to any
 * address, loopback included, and names the page in the handshake's Origin header (RFC 6454:
 * scheme://host[:port], the default port left out); a server that does not check it serves
 * every page the user has open (cross-site WebSocket hijacking). A handshake is accepted without
 * Origin (Java, Python and Node clients send none), from the server's own origin, or from one
 * {@link RsioServer.Builder#origins} allows ("*": every page); the rest get HTTP 403.
 *
 * <p>{@link HandshakeCheck} asks it about each handshake at the server's path ({@link #refuses}).
 * Each refusal is logged (INFO on {@code io.rstreams.net}) with the origin and how to allow it:
 * the page itself cannot read the 403's body, a browser shows it only a failed WebSocket.
 */
final class OriginCheck {
    private static final System.Logger LOG = System.getLogger("io.rstreams.net");
    static final String ALL = "*";
    private static final List<String> LOOPBACK = List.of("localhost", "127.0.0.1", "::1");
    private static final List<String> WILDCARD = List.of("", "0.0.0.0", "::");
    private static final Map<String, Integer> DEFAULT_PORT = Map.of("http", 80, "https", 443);

    private final RsioUrl url;
    private final Set<String> more;

    /** {@code more}: from {@link #check}, never null (a server allowing every page has no handler). */
    OriginCheck(RsioUrl url, Set<String> more) {
        this.url = url;
        this.more = more;
    }

    /**
     * The builder's origins, checked and in the form browsers send (lower case, no default
     * port); null when they hold "*" (every page may connect).
     *
     * @throws IllegalArgumentException naming {@code origins} when one is not http(s)://host[:port] or "*"
     */
    static Set<String> check(List<String> origins) {
        Set<String> checked = new LinkedHashSet<>();
        for (String origin : origins) {
            if (origin == null) {
                throw new IllegalArgumentException("origins: an origin is a string such as \"https://app.example:8443\", got null");
            }
            if (origin.equals(ALL)) {
                return null;
            }
            checked.add(normalized(origin));
        }
        return checked;
    }

    private static String normalized(String origin) {
        String problem = null;
        URI uri = null;
        try {
            uri = new URI(origin);
        } catch (URISyntaxException e) {
            problem = e.getReason();
        }
        String scheme = uri == null || uri.getScheme() == null ? null : uri.getScheme().toLowerCase(Locale.ROOT);
        if (problem != null) {
            // reported below
        } else if (scheme == null || !DEFAULT_PORT.containsKey(scheme) || uri.getRawAuthority() == null || uri.getHost() == null) {
            problem = "it needs http:// or https:// and a host";
        } else if (uri.getRawUserInfo() != null) {
            problem = "an origin has no user name or password";
        } else if (!(uri.getRawPath().isEmpty() || uri.getRawPath().equals("/")) || uri.getRawQuery() != null
                || uri.getRawFragment() != null || origin.endsWith("?") || origin.endsWith("#")) {
            problem = "an origin has no path, query or fragment";
        }
        if (problem != null) {
            throw new IllegalArgumentException("origins: origin \"" + origin + "\": " + problem
                    + " (an origin is SCHEME://HOST[:PORT], e.g. \"https://app.example:8443\", as a page's address begins;"
                    + " \"" + ALL + "\": every one)");
        }
        int port = uri.getPort() < 0 ? DEFAULT_PORT.get(scheme) : uri.getPort();
        return serialized(scheme, uri.getHost().replaceAll("^\\[(.*)\\]$", "$1").toLowerCase(Locale.ROOT), port);
    }

    /** A serialized origin as browsers send it: brackets for IPv6, no default port. */
    private static String serialized(String scheme, String host, int port) {
        String name = host.contains(":") ? "[" + host + "]" : host;
        return port == DEFAULT_PORT.get(scheme) ? scheme + "://" + name : scheme + "://" + name + ":" + port;
    }

    /**
     * The origins of pages served at host:port itself (https for wss://): the host as given and,
     * for a loopback or wildcard host, every loopback name a browser on this machine may have
     * opened the page by.
     */
    static List<String> own(String host, int port, boolean secure) {
        String scheme = secure ? "https" : "http";
        String given = host.replaceAll("^\\[(.*)\\]$", "$1").toLowerCase(Locale.ROOT);
        List<String> hosts = new ArrayList<>(List.of(given));
        if (LOOPBACK.contains(given) || WILDCARD.contains(given)) {
            LOOPBACK.stream().filter(name -> !name.equals(given)).forEach(hosts::add);
        }
        return hosts.stream().filter(name -> !name.isEmpty()).map(name -> serialized(scheme, name, port)).toList();
    }

    /** True, once it has answered 403, when {@code request} comes from a page not allowed (the caller releases it). */
    boolean refuses(ChannelHandlerContext ctx, FullHttpRequest request) {
        String origin = request.headers().get(HttpHeaderNames.ORIGIN);
        if (origin == null || allowed(ctx, origin)) {
            return false;
        }
        refuse(ctx, origin);
        return true;
    }

    private boolean allowed(ChannelHandlerContext ctx, String origin) {
        if (more.contains(origin)) {
            return true;
        }
        // the port the connection came to: the real one when the server was bound to port 0
        int port = ctx.channel().localAddress() instanceof InetSocketAddress local ? local.getPort() : url.port();
        return own(url.host(), port, url.secure()).contains(origin);
    }

    private static void refuse(ChannelHandlerContext ctx, String origin) {
        String allow = "to allow it, build the RsioServer with origins(\"" + origin + "\")";
        LOG.log(System.Logger.Level.INFO, "refused a WebSocket handshake from a page at origin " + origin + " (HTTP 403); " + allow);
        String text = "a page at origin " + origin + " may not connect to this RS.io server (only its own origin may); " + allow + "\n";
        HandshakeCheck.refuse(ctx, HttpResponseStatus.FORBIDDEN, text);
    }
}
