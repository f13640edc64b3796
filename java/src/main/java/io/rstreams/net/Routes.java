package io.rstreams.net;

import java.net.URLDecoder;
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
 * tried in the order they were added.
 */
final class Routes {
    /** A publisher factory with the codec its elements are encoded with. */
    record Route(String pattern, int elementSize, Function<PublisherRequest, Flow.Publisher<byte[]>> factory) {}

    /**
     * What a subscribe resolved to; {@code repeated}: the first query key the name gives more
     * than once (its last value is in the request), or null. A subscribe naming one is refused.
     */
    record Match(Route route, PublisherRequest request, String repeated) {}

    private final List<Route> routes = new ArrayList<>();

    void add(Route route) {
        routes.add(route);
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
        int q = name.indexOf('?');
        String path = q < 0 ? name : name.substring(0, q);
        Map<String, String> params = new HashMap<>();
        String repeated = null;
        if (q >= 0) {
            for (String pair : name.substring(q + 1).split("&")) {
                if (pair.isEmpty()) {
                    continue;
                }
                int eq = pair.indexOf('=');
                String k = eq < 0 ? pair : pair.substring(0, eq);
                String v = eq < 0 ? "" : pair.substring(eq + 1);
                String key = decode(k);
                if (params.put(key, decode(v)) != null && repeated == null) {
                    repeated = key;
                }
            }
        }
        for (Route r : routes) {
            if (r.pattern().equals(path)) {
                return new Match(r, new PublisherRequest(name, path, params, connection), repeated);
            }
        }
        String[] segments = path.split("/", -1);
        for (Route r : routes) {
            Map<String, String> fields = match(r.pattern().split("/", -1), segments);
            if (fields != null) {
                Map<String, String> all = new HashMap<>(params);
                all.putAll(fields);
                return new Match(r, new PublisherRequest(name, path, all, connection), repeated);
            }
        }
        return null;
    }

    private static Map<String, String> match(String[] pattern, String[] segments) {
        Map<String, String> fields = new HashMap<>();
        for (int i = 0; i < pattern.length; i++) {
            String p = pattern[i];
            boolean field = p.length() > 2 && p.startsWith("{") && p.endsWith("}");
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
                fields.put(p.substring(1, p.length() - 1), decode(segments[i]));
            } else if (!p.equals(segments[i])) {
                return null;
            }
        }
        return pattern.length == segments.length ? fields : null;
    }

    private static String decode(String s) {
        try {
            return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            return s;
        }
    }
}
