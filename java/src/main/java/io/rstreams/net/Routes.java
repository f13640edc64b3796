package io.rstreams.net;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Flow;
import java.util.function.Function;

/**
 * Names and name patterns mapped to publisher factories (PROTOCOL.md §5.5). A pattern's
 * segment {@code {field}} matches one path segment and becomes a parameter; a last segment
 * {@code {field...}} matches the rest of the path. Exact names win over patterns; patterns are
 * tried in the order they were added. A path is compared segment by segment, each percent-decoded
 * (RFC 3986): the requested {@code a%20b} and the offered {@code a b} (or {@code a%20b}) are the
 * same name, and {@code %2F} is a {@code /} inside one segment, so {@code files/a%2Fb} matches
 * {@code files/{name}} with {@code name} "a/b" (a rest field joins its decoded segments with '/').
 */
final class Routes {
    /**
     * A publisher factory with what its codec says of its elements: their size (0: any) and media
     * type (null: none stated, PROTOCOL.md §17.1).
     */
    record Route(String pattern, int elementSize, String contentType, Function<PublisherRequest, Flow.Publisher<byte[]>> factory) {
        /** A route that states no media type. */
        Route(String pattern, int elementSize, Function<PublisherRequest, Flow.Publisher<byte[]>> factory) {
            this(pattern, elementSize, null, factory);
        }
    }

    /**
     * What a subscribe resolved to; {@code repeated}: the first query key the name gives more
     * than once (its last value is in the request), or null; {@code fault}: what makes the name
     * malformed (PROTOCOL.md §5.5), worded to follow {@code "publisher name 'NAME' "}, or null:
     * the first path segment, then query part, left to right (a key, then its value), that is not
     * percent-encoded UTF-8 (it is matched, and stays in the request, as written), or the first key
     * given twice. A subscribe
     * naming a malformed name is refused with code 1.
     */
    record Match(Route route, PublisherRequest request, String repeated, String fault) {}

    /** A channel factory on raw bytes (§21.3): the input's elements in, the output's out; null: no such channel. */
    interface ChannelFactory {
        Flow.Publisher<byte[]> open(ChannelInput<byte[]> input, PublisherRequest request);
    }

    private final List<Route> routes = new ArrayList<>();
    /** The channels offered (§21.3), matched like routes; null until the first. */
    private Routes channels;
    /** The channel factories by pattern (the first one offered under a pattern wins, as its route does). */
    private final Map<String, ChannelFactory> channelFactories = new HashMap<>();

    /** Offers channel {@code pattern} (§21.3), its output's elements of {@code elementSize} (0: any) and media type (null: none). */
    void addChannel(String pattern, int elementSize, String contentType, ChannelFactory factory) {
        if (channels == null) {
            channels = new Routes();
        }
        channels.add(new Route(pattern, elementSize, contentType, request -> null));
        channels.channelFactories.putIfAbsent(pattern, factory);
    }

    /** The channel table (§21.3), or null when no channel is offered. */
    Routes channels() {
        return channels;
    }

    /** The factory of a channel route {@link #channels()} resolved to. */
    ChannelFactory channelFactory(Route route) {
        return channelFactories.get(route.pattern());
    }
    /** The routes' patterns split into segments, the literal ones percent-decoded; in the order of routes. */
    private final List<String[]> segments = new ArrayList<>();

    void add(Route route) {
        String[] parts = route.pattern().split("/", -1);
        for (int i = 0; i < parts.length; i++) {
            if (!isField(parts[i])) {
                String decoded = decode(parts[i]);
                if (decoded == null) {
                    throw new IllegalArgumentException("the name '" + route.pattern() + "' cannot be offered: its path segment '"
                            + parts[i] + "' is not percent-encoded UTF-8 (write '%' as %25, PROTOCOL.md §5.5)");
                }
                parts[i] = decoded;
            }
        }
        routes.add(route);
        segments.add(parts);
    }

    private static boolean isField(String segment) {
        return segment.length() > 2 && segment.startsWith("{") && segment.endsWith("}");
    }

    boolean isEmpty() {
        return routes.isEmpty();
    }

    /**
     * The route for {@code name}, or null if none matches. The query is read as RFC 3986 says
     * (PROTOCOL.md §5.5): pairs split on {@code &} (empty ones skipped), each on its first {@code =} (none: the value is
     * empty), each part percent-decoded; {@code +} stays a plus (a space is {@code %20}).
     */
    Match resolve(String name, RsioConnection connection) {
        return resolve(name, connection, io.rstreams.wire.SubscribeMetadata.EMPTY);
    }

    /** {@link #resolve(String, RsioConnection)} for a subscribe that came with {@code metadata} (§18.1), which the request carries. */
    Match resolve(String name, RsioConnection connection, io.rstreams.wire.SubscribeMetadata metadata) {
        int q = name.indexOf('?');
        String path = q < 0 ? name : name.substring(0, q);
        Map<String, String> params = new HashMap<>();
        String repeated = null;
        String fault = null;
        String[] segs = path.split("/", -1);
        if (path.indexOf('%') >= 0) {
            for (int i = 0; i < segs.length; i++) {
                String decoded = decode(segs[i]);
                if (decoded == null) {
                    fault = fault != null ? fault : "has the path segment '" + segs[i] + "', which is not percent-encoded UTF-8";
                } else {
                    segs[i] = decoded;
                }
            }
        }
        if (q >= 0) {
            for (String pair : name.substring(q + 1).split("&")) {
                if (pair.isEmpty()) {
                    continue;
                }
                int eq = pair.indexOf('=');
                String k = eq < 0 ? pair : pair.substring(0, eq);
                String v = eq < 0 ? "" : pair.substring(eq + 1);
                String key = decode(k);
                if (key == null) {
                    fault = fault != null ? fault : notUtf8(k);
                    key = k;
                } else if (params.containsKey(key)) {
                    repeated = repeated != null ? repeated : key;
                    fault = fault != null ? fault : "gives the parameter '" + key + "' more than once";
                }
                String value = decode(v);
                if (value == null) {
                    fault = fault != null ? fault : notUtf8(v);
                    value = v;
                }
                params.put(key, value);
            }
        }
        for (int i = 0; i < routes.size(); i++) {
            if (exact(segments.get(i), segs)) {
                return new Match(routes.get(i), new PublisherRequest(name, path, params, connection, metadata), repeated, fault);
            }
        }
        for (int i = 0; i < routes.size(); i++) {
            Route r = routes.get(i);
            Map<String, String> fields = match(segments.get(i), segs);
            if (fields != null) {
                Map<String, String> all = new HashMap<>(params);
                all.putAll(fields);
                return new Match(r, new PublisherRequest(name, path, all, connection, metadata), repeated, fault);
            }
        }
        return null;
    }

    /** Whether a pattern without fields names these decoded segments. */
    private static boolean exact(String[] pattern, String[] segments) {
        if (pattern.length != segments.length) {
            return false;
        }
        for (int i = 0; i < pattern.length; i++) {
            if (isField(pattern[i]) || !pattern[i].equals(segments[i])) {
                return false;
            }
        }
        return true;
    }

    private static Map<String, String> match(String[] pattern, String[] segments) {
        Map<String, String> fields = new HashMap<>();
        for (int i = 0; i < pattern.length; i++) {
            String p = pattern[i];
            boolean field = isField(p);
            if (field && p.endsWith("...}") && i == pattern.length - 1) {
                if (i >= segments.length) {
                    return null;
                }
                fields.put(p.substring(1, p.length() - 4), String.join("/", List.of(segments).subList(i, segments.length)));
                return fields;
            }
            if (i >= segments.length) {
                return null;
            }
            if (field) {
                if (segments[i].isEmpty()) {
                    return null;
                }
                fields.put(p.substring(1, p.length() - 1), segments[i]);
            } else if (!p.equals(segments[i])) {
                return null;
            }
        }
        return pattern.length == segments.length ? fields : null;
    }

    /**
     * What a subscribe for {@code name} that no route matches is refused with (PROTOCOL.md §5.5),
     * the same text in every binding: {@code no publisher named 'PATH'}, PATH the name's path as
     * written (up to its first {@code ?}, not decoded, not escaped).
     */
    static String unknown(String name) {
        int q = name.indexOf('?');
        return "no publisher named '" + (q < 0 ? name : name.substring(0, q)) + "'";
    }

    /**
     * What a plain subscribe for {@code name}, which the side offers only as a channel, is refused
     * with, code 2 (PROTOCOL.md §21.3): {@code no publisher named 'PATH' ('PATH' is a channel: open
     * it as one, PROTOCOL.md §21.3)}, {@code PATH} as in {@link #unknown}, the same text in every binding.
     */
    static String onlyAChannel(String name) {
        int q = name.indexOf('?');
        String path = q < 0 ? name : name.substring(0, q);
        return "no publisher named '" + path + "' ('" + path + "' is a channel: open it as one, PROTOCOL.md §21.3)";
    }

    /** What the opening of channel {@code name} is refused with when no channel is offered under it, code 2 (§21.3). */
    static String unknownChannel(String name) {
        int q = name.indexOf('?');
        return "no channel named '" + (q < 0 ? name : name.substring(0, q)) + "' (PROTOCOL.md §21.3)";
    }

    /** What the opening of channel {@code name} is refused with when its factory threw, code 9 (§19.2), as {@link #failed}. */
    static String channelFailed(String name) {
        int q = name.indexOf('?');
        return "channel '" + (q < 0 ? name : name.substring(0, q)) + "' could not be created: its factory failed (PROTOCOL.md §19.2)";
    }

    /**
     * What a subscribe for {@code name} is refused with, code 9 (PROTOCOL.md §19.2), when its factory
     * threw: {@code publisher 'PATH' could not be created: its factory failed (PROTOCOL.md §19.2)},
     * {@code PATH} as in {@link #unknown}, the same text in every binding. Not the exception's message
     * nor its class: a message can hold what the peer must not see (docs/security.md); the server
     * logs the exception.
     */
    static String failed(String name) {
        int q = name.indexOf('?');
        return "publisher '" + (q < 0 ? name : name.substring(0, q)) + "' could not be created: its factory failed (PROTOCOL.md §19.2)";
    }

    /**
     * What a subscribe for {@code name} is refused with, code 9 (PROTOCOL.md §19.2), when its
     * publisher's subscribe threw (rule 1.9: it must return normally): {@code publisher 'PATH' could
     * not be subscribed to: its subscribe failed (PROTOCOL.md §19.2)}, {@code PATH} as in
     * {@link #unknown}, the same text in every binding; as for {@link #failed}, not the exception's
     * message nor its class (the server logs the exception).
     */
    static String subscribeFailed(String name) {
        int q = name.indexOf('?');
        return "publisher '" + (q < 0 ? name : name.substring(0, q))
                + "' could not be subscribed to: its subscribe failed (PROTOCOL.md §19.2)";
    }

    private static String notUtf8(String part) {
        return "has the query part '" + part + "', which is not percent-encoded UTF-8";
    }

    /**
     * {@code s} percent-decoded ({@code +} stays a plus), or null when it is not percent-encoded
     * UTF-8 (RFC 3986 §2.1): a {@code %} without two hex digits after it, or escapes that decode
     * to no UTF-8 (a stray byte, a cut sequence, an overlong form, a surrogate).
     */
    static String decode(String s) {
        int percent = s.indexOf('%');
        if (percent < 0) {
            return s;
        }
        StringBuilder out = new StringBuilder(s.length()).append(s, 0, percent);
        byte[] run = new byte[s.length() / 3];
        int i = percent;
        while (i < s.length()) {
            if (s.charAt(i) != '%') {
                out.append(s.charAt(i++));
                continue;
            }
            int n = 0;
            while (i < s.length() && s.charAt(i) == '%') {
                int high = i + 2 < s.length() ? hex(s.charAt(i + 1)) : -1;
                int low = high < 0 ? -1 : hex(s.charAt(i + 2));
                if (low < 0) {
                    return null;
                }
                run[n++] = (byte) (high << 4 | low);
                i += 3;
            }
            try {
                out.append(StandardCharsets.UTF_8.newDecoder()
                        .onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT)
                        .decode(ByteBuffer.wrap(run, 0, n)));
            } catch (CharacterCodingException e) {
                return null;
            }
        }
        return out.toString();
    }

    private static int hex(char c) {
        if (c >= '0' && c <= '9') {
            return c - '0';
        }
        if (c >= 'a' && c <= 'f') {
            return c - 'a' + 10;
        }
        if (c >= 'A' && c <= 'F') {
            return c - 'A' + 10;
        }
        return -1;
    }
}
