package io.rstreams.net;

import java.util.concurrent.Flow;

/**
 * A publisher of byte elements that are all exactly {@link #elementSize()} bytes. A server
 * route's factory may return one: its subscription then announces that size in onSubscribe and
 * its elements travel packed (PROTOCOL.md §7), whatever the route's codec.
 */
public interface FixedSizePublisher extends Flow.Publisher<byte[]> {
    /** The size of every element, &gt; 0. */
    int elementSize();

    /** {@code publisher}, declared to emit elements of exactly {@code size} bytes. */
    static FixedSizePublisher of(Flow.Publisher<byte[]> publisher, int size) {
        if (size < 1) {
            throw new IllegalArgumentException("a fixed element size is >= 1, got " + size);
        }
        return new FixedSizePublisher() {
            @Override
            public int elementSize() {
                return size;
            }

            @Override
            public void subscribe(Flow.Subscriber<? super byte[]> subscriber) {
                publisher.subscribe(subscriber);
            }
        };
    }
}
