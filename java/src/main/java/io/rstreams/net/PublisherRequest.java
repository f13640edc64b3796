package io.rstreams.net;

import io.rstreams.wire.SubscribeMetadata;
import java.util.Map;
import java.util.Objects;

/**
 * A peer's subscribe, as a publisher factory sees it (PROTOCOL.md §5.5).
 *
 * @param name the whole name the peer sent, e.g. {@code sensors/7?rate=5}
 * @param path the part before {@code ?}
 * @param params the query's {@code key=value} pairs (percent-decoded) and the pattern's {@code {fields}}
 * @param connection the connection it arrived on: a factory may subscribe back to the peer on it
 * @param metadata the entries of the subscribeMetadata that came with the subscribe (extension
 *     metadata, PROTOCOL.md §18.1: {@code traceparent}, {@code accept}, ...), as rstreams'
 *     {@code subscribe_metadata()}; {@link SubscribeMetadata#EMPTY} without any
 */
public record PublisherRequest(String name, String path, Map<String, String> params, RsioConnection connection,
        SubscribeMetadata metadata) {
    /** Copies the parameters. */
    public PublisherRequest {
        params = Map.copyOf(params);
        metadata = Objects.requireNonNull(metadata, "metadata");
    }

    /** A request whose subscribe came without metadata. */
    public PublisherRequest(String name, String path, Map<String, String> params, RsioConnection connection) {
        this(name, path, params, connection, SubscribeMetadata.EMPTY);
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
