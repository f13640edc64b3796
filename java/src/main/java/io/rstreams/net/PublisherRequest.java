package io.rstreams.net;

import java.util.Map;

/**
 * A peer's subscribe, as a publisher factory sees it (PROTOCOL.md §5.5).
 *
 * @param name the whole name the peer sent, e.g. {@code sensors/7?rate=5}
 * @param path the part before {@code ?}
 * @param params the query's {@code key=value} pairs (percent-decoded) and the pattern's {@code {fields}}
 * @param connection the connection it arrived on: a factory may subscribe back to the peer on it
 */
public record PublisherRequest(String name, String path, Map<String, String> params, RsioConnection connection) {
    /** Copies the parameters. */
    public PublisherRequest {
        params = Map.copyOf(params);
    }

    /** The parameter {@code key}, or {@code fallback} if absent. */
    public String param(String key, String fallback) {
        return params.getOrDefault(key, fallback);
    }

    /** The parameter {@code key} as a long, or {@code fallback} if absent. */
    public long longParam(String key, long fallback) {
        String v = params.get(key);
        if (v == null) {
            return fallback;
        }
        try {
            return Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("parameter " + key + " must be an integer, got '" + v + "'", e);
        }
    }
}
