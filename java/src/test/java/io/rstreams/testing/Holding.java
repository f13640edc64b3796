package io.rstreams.testing;

import java.util.concurrent.Flow;

/**
 * A subscriber that makes the given requests as it is subscribed (in {@code onSubscribe}, so in
 * one turn of the thread that subscribes it), keeps its subscription for the test to request
 * more or cancel, and ignores what comes.
 */
public final class Holding<T> implements Flow.Subscriber<T> {
    private final long[] requests;
    /** The subscription, once subscribed. */
    public volatile Flow.Subscription subscription;

    public Holding(long... requests) {
        this.requests = requests.clone();
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
        subscription = s;
        for (long n : requests) {
            s.request(n);
        }
    }

    @Override
    public void onNext(T item) {}

    @Override
    public void onError(Throwable t) {}

    @Override
    public void onComplete() {}
}
