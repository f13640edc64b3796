package io.rstreams.testing;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A subscriber that starts with zero demand, requests on command and records every signal;
 * tests wait on its futures and queues, never on sleeps.
 */
public final class TestSubscriber<T> implements Flow.Subscriber<T> {
    public final CompletableFuture<Flow.Subscription> subscribed = new CompletableFuture<>();
    /** Completes with null at onComplete, with the error at onError. */
    public final CompletableFuture<Throwable> terminated = new CompletableFuture<>();
    private final LinkedBlockingQueue<T> received = new LinkedBlockingQueue<>();
    private final List<T> all = new ArrayList<>();

    @Override
    public void onSubscribe(Flow.Subscription s) {
        subscribed.complete(s);
    }

    @Override
    public void onNext(T item) {
        synchronized (all) {
            all.add(item);
        }
        received.add(item);
    }

    @Override
    public void onError(Throwable t) {
        terminated.complete(t);
    }

    @Override
    public void onComplete() {
        terminated.complete(null);
    }

    public Flow.Subscription subscription() throws Exception {
        return subscribed.get(10, TimeUnit.SECONDS);
    }

    public void request(long n) throws Exception {
        subscription().request(n);
    }

    /** The next element (waits at most 10 s). */
    public T next() throws InterruptedException {
        T t = received.poll(10, TimeUnit.SECONDS);
        if (t == null) {
            throw new AssertionError("no element within 10 s; terminated: " + terminated.getNow(null));
        }
        return t;
    }

    /** The next {@code n} elements. */
    public List<T> take(int n) throws InterruptedException {
        List<T> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(next());
        }
        return out;
    }

    /** Waits for the terminal signal: null for onComplete, else the error. */
    public Throwable awaitTerminal() throws Exception {
        return terminated.get(10, TimeUnit.SECONDS);
    }

    public List<T> all() {
        synchronized (all) {
            return new ArrayList<>(all);
        }
    }
}
