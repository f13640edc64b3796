package io.rstreams.conformance;

import io.rstreams.net.ContentTypedPublisher;
import io.rstreams.net.FixedSizePublisher;
import io.rstreams.net.PublisherRequest;
import io.rstreams.net.RsioServer;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Flow;

/**
 * The publishers an endpoint under rstreams' conformance suite offers (docs/conformance.md,
 * "The conformance publishers"), written from that table: range, fixed, large, error, never,
 * infinite, stats and echo, under {@code conformance/}.
 */
final class ConformancePublishers {
    private static final long MAX_SIZE = 64L << 20;
    private final Map<String, IndexedSource.SourceStats> stats = new ConcurrentHashMap<>();

    /** Element {@code index} of size {@code size}: the low min(size, 8) bytes of index big-endian, then 0..250 cycling. */
    static byte[] elementBytes(long index, int size) {
        byte[] out = new byte[size];
        int head = Math.min(size, 8);
        for (int k = 0; k < head; k++) {
            out[head - 1 - k] = (byte) (index >>> (8 * k));
        }
        for (int k = 8; k < size; k++) {
            out[k] = (byte) ((k - 8) % 251);
        }
        return out;
    }

    /** Adds the routes to {@code builder}. */
    RsioServer.Builder addTo(RsioServer.Builder builder) {
        return builder
                .route("conformance/range", r -> new IndexedSource(i -> elementBytes(i, 8), param(r, "n", 10, 1L << 62), -1, null, false))
                .route("conformance/fixed", r -> {
                    int size = (int) Math.max(1, param(r, "size", 8, MAX_SIZE));
                    // application/octet-stream, as rstreams' fixed_size(n) codec states (PROTOCOL.md §17.4)
                    return ContentTypedPublisher.withContentType(FixedSizePublisher.of(
                            new IndexedSource(i -> elementBytes(i, size), param(r, "n", 10, 1L << 62), -1, null, false), size),
                            "application/octet-stream");
                })
                .route("conformance/large", r -> {
                    int size = (int) param(r, "size", 1 << 20, MAX_SIZE);
                    return new IndexedSource(i -> elementBytes(i, size), param(r, "n", 1, 1L << 62), -1, null, false);
                })
                .route("conformance/error", r -> new IndexedSource(i -> elementBytes(i, 8), -1, param(r, "after", 0, 1L << 62), null, false))
                .route("conformance/never", r -> new IndexedSource(i -> new byte[0], -1, -1, null, true))
                .route("conformance/infinite", r -> {
                    int size = (int) param(r, "size", 8, MAX_SIZE);
                    IndexedSource.SourceStats s = stats.computeIfAbsent(r.param("tag", ""), k -> new IndexedSource.SourceStats());
                    return new IndexedSource(i -> elementBytes(i, size), -1, -1, s, false);
                })
                .route("conformance/stats", r -> {
                    IndexedSource.SourceStats s = stats.getOrDefault(r.param("tag", ""), new IndexedSource.SourceStats());
                    byte[] payload = s.json().getBytes(StandardCharsets.UTF_8);
                    return new IndexedSource(i -> payload, 1, -1, null, false);
                })
                .route("conformance/echo", ConformancePublishers::echo);
    }

    /** The server subscribes, on the connection the subscribe came on, to the driver's publisher {@code name}. */
    private static Flow.Publisher<byte[]> echo(PublisherRequest r) {
        String name = r.param("name", "");
        return name.isEmpty() || !r.connection().isOpen() ? null : r.connection().publisher(name);
    }

    private static long param(PublisherRequest r, String key, long fallback, long max) {
        long v = r.longParam(key, fallback);
        if (v < 0 || v > max) {
            throw new IllegalArgumentException(key + "=" + v + " is outside 0.." + max);
        }
        return v;
    }
}
