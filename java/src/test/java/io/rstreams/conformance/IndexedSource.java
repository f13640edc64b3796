package io.rstreams.conformance;

import java.util.Objects;
import java.util.concurrent.Flow;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongFunction;

/**
 * A cold publisher of {@code make(i)} for i = 0, 1, ... ({@code count} &lt; 0: endless), optionally
 * failing after {@code failAfter} elements, optionally silent; a trampolined drain loop keeps
 * re-entrant requests bounded (rule 3.3).
 */
final class IndexedSource implements Flow.Publisher<byte[]> {
    static final String ERROR_TEXT = "conformance/error: the publisher failed on purpose";

    private final LongFunction<byte[]> make;
    private final long count;
    private final long failAfter;
    private final SourceStats stats;
    private final boolean silent;

    IndexedSource(LongFunction<byte[]> make, long count, long failAfter, SourceStats stats, boolean silent) {
        this.make = make;
        this.count = count;
        this.failAfter = failAfter;
        this.stats = stats;
        this.silent = silent;
    }

    @Override
    public void subscribe(Flow.Subscriber<? super byte[]> subscriber) {
        Objects.requireNonNull(subscriber, "rule 1.9: subscribe(null)");
        if (stats != null) {
            stats.subscribed.incrementAndGet();
        }
        Sub s = new Sub(subscriber);
        subscriber.onSubscribe(s);
        s.drain();
    }

    private final class Sub implements Flow.Subscription {
        private final Flow.Subscriber<? super byte[]> subscriber;
        private final AtomicLong demand = new AtomicLong();
        private final AtomicInteger wip = new AtomicInteger();
        private volatile boolean done;
        private long index;

        Sub(Flow.Subscriber<? super byte[]> subscriber) {
            this.subscriber = subscriber;
        }

        @Override
        public void request(long n) {
            if (done) {
                return;
            }
            if (n <= 0) {
                done = true;
                subscriber.onError(new IllegalArgumentException(
                        "rule 3.9: request(n) needs an int n > 0 (non-positive subscription request), got " + n));
                return;
            }
            if (stats != null) {
                stats.requested.accumulateAndGet(n, Sub::add);
            }
            demand.accumulateAndGet(n, Sub::add);
            drain();
        }

        private static long add(long a, long b) {
            long s = a + b;
            return s < 0 ? Long.MAX_VALUE : s;
        }

        @Override
        public void cancel() {
            if (!done) {
                done = true;
                if (stats != null) {
                    stats.cancelled.incrementAndGet();
                }
            }
        }

        void drain() {
            if (wip.getAndIncrement() != 0) {
                return;
            }
            int missed = 1;
            do {
                while (!done) {
                    if (failAfter >= 0 && index >= failAfter) {
                        done = true;
                        subscriber.onError(new RuntimeException(ERROR_TEXT));
                        break;
                    }
                    if (count >= 0 && index >= count) {
                        done = true;
                        subscriber.onComplete();
                        break;
                    }
                    long d = demand.get();
                    if (d == 0 || silent) {
                        break;
                    }
                    if (d != Long.MAX_VALUE) {
                        demand.decrementAndGet();
                    }
                    byte[] element = make.apply(index++);
                    if (stats != null) {
                        stats.pulled.incrementAndGet();
                    }
                    subscriber.onNext(element);
                }
                missed = wip.addAndGet(-missed);
            } while (missed != 0);
        }
    }

    /** What the endless sources with one tag did so far. */
    static final class SourceStats {
        final AtomicLong subscribed = new AtomicLong();
        final AtomicLong requested = new AtomicLong();
        final AtomicLong pulled = new AtomicLong();
        final AtomicLong cancelled = new AtomicLong();

        String json() {
            return "{\"subscribed\":" + subscribed.get() + ",\"requested\":" + requested.get() + ",\"pulled\":"
                    + pulled.get() + ",\"cancelled\":" + cancelled.get() + "}";
        }
    }
}
