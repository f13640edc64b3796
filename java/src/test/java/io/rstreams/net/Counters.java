package io.rstreams.net;

import java.util.Objects;
import java.util.concurrent.Flow;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongFunction;

/** Small cold publishers for tests: a range of longs, a repeated value, a list's values, one that never signals. Trampolined (rule 3.3). */
public final class Counters {
    private Counters() {}

    /** from, from + 1, ..., to - 1. */
    public static Flow.Publisher<Long> range(long from, long to) {
        return new Source<>(i -> from + i, to - from);
    }

    /** {@code value}, {@code n} times. */
    public static <T> Flow.Publisher<T> repeat(T value, long n) {
        return new Source<>(i -> value, n);
    }

    /** The elements of {@code values}, in order. */
    public static <T> Flow.Publisher<T> of(java.util.List<T> values) {
        return new Source<>(i -> values.get((int) i), values.size());
    }

    /**
     * {@code n} elements of {@code small} bytes, then {@code m} of {@code large} bytes: a stream
     * whose elements suddenly grow, so a window asked for by the small ones is answered with
     * large ones.
     */
    public static Flow.Publisher<byte[]> growing(int small, long n, int large, long m) {
        byte[] first = new byte[small];
        byte[] then = new byte[large];
        return new Source<>(i -> i < n ? first : then, n + m);
    }

    /** A publisher that calls onSubscribe and nothing more, whatever is requested. */
    public static <T> Flow.Publisher<T> silent() {
        return s -> s.onSubscribe(new Flow.Subscription() {
            @Override
            public void request(long n) {}

            @Override
            public void cancel() {}
        });
    }

    private static final class Source<T> implements Flow.Publisher<T> {
        private final LongFunction<T> make;
        private final long count;

        Source(LongFunction<T> make, long count) {
            this.make = make;
            this.count = count;
        }

        @Override
        public void subscribe(Flow.Subscriber<? super T> subscriber) {
            Objects.requireNonNull(subscriber, "rule 1.9");
            Sub<T> s = new Sub<>(subscriber, make, count);
            subscriber.onSubscribe(s);
            s.drain();
        }
    }

    private static final class Sub<T> implements Flow.Subscription {
        private final Flow.Subscriber<? super T> subscriber;
        private final LongFunction<T> make;
        private final long count;
        private final AtomicLong demand = new AtomicLong();
        private final AtomicInteger wip = new AtomicInteger();
        private volatile boolean done;
        private long index;

        Sub(Flow.Subscriber<? super T> subscriber, LongFunction<T> make, long count) {
            this.subscriber = subscriber;
            this.make = make;
            this.count = count;
        }

        @Override
        public void request(long n) {
            if (n <= 0) {
                if (!done) {
                    done = true;
                    subscriber.onError(new IllegalArgumentException("rule 3.9: request(n) needs an int n > 0 (non-positive subscription request), got " + n));
                }
                return;
            }
            demand.accumulateAndGet(n, (a, b) -> a + b < 0 ? Long.MAX_VALUE : a + b);
            drain();
        }

        @Override
        public void cancel() {
            done = true;
        }

        void drain() {
            if (wip.getAndIncrement() != 0) {
                return;
            }
            int missed = 1;
            do {
                while (!done) {
                    if (index >= count) {
                        done = true;
                        subscriber.onComplete();
                        break;
                    }
                    long d = demand.get();
                    if (d == 0) {
                        break;
                    }
                    if (d != Long.MAX_VALUE) {
                        demand.decrementAndGet();
                    }
                    subscriber.onNext(make.apply(index++));
                }
                missed = wip.addAndGet(-missed);
            } while (missed != 0);
        }
    }
}
