package io.rstreams.net;

import java.util.Objects;
import java.util.concurrent.Flow;
import java.util.function.Function;

/**
 * A channel's input as its factory receives it (PROTOCOL.md §21.3): a publisher that may be
 * subscribed to once. Its subscriber's {@code request(n)} becomes inputRequest, its
 * {@code cancel} inputCancel (§21.4, §21.5); the opener's elements reach {@code onNext} on the
 * connection's I/O thread, split ones joined (§21.6); the requests made in one turn of that
 * thread go out as one inputRequest, their sum, as rstreams sends them. It ends with the opener's inputComplete
 * ({@code onComplete}) or inputError ({@code onError} with a {@link ChannelInputException}
 * carrying its text), or with the output: when the subscription ends first (terminal signal
 * sent, cancel, or the connection's end) a running input fails with an {@link IllegalStateException}
 * {@code the channel's subscription ended before its input (PROTOCOL.md §21.5)}. Confined to the
 * I/O thread; {@code subscribe}, {@code request} and {@code cancel} hop there.
 */
final class ChannelInput<T> implements Flow.Publisher<T> {
    static final String OUTPUT_ENDED = "the channel's subscription ended before its input (PROTOCOL.md §21.5)";

    private final Endpoint endpoint;
    private final long id;
    private final Function<byte[], T> decode;
    private boolean subscribed;
    private Flow.Subscriber<? super T> subscriber;
    /** Set once the input ended (before its subscriber may have heard it): null while running. */
    private Throwable end;
    private boolean ended;
    /** Requested by the subscriber, not yet sent: one inputRequest per I/O-thread turn, as rstreams coalesces them. */
    private long pending;
    private boolean requestQueued;

    ChannelInput(Endpoint endpoint, long id, Function<byte[], T> decode) {
        this.endpoint = endpoint;
        this.id = id;
        this.decode = decode;
    }

    /** The same input, its elements decoded by {@code codec}. */
    <U> Flow.Publisher<U> decoded(Codec<U> codec) {
        return Encoding.mapped(this, item -> codec.decode((byte[]) item));
    }

    @Override
    public void subscribe(Flow.Subscriber<? super T> s) {
        Objects.requireNonNull(s, "rule 1.9: subscribe(null) is illegal; pass a Subscriber");
        endpoint.runOnLoop(() -> subscribed(s));
    }

    private void subscribed(Flow.Subscriber<? super T> s) {
        if (subscribed) {
            s.onSubscribe(NOTHING);
            s.onError(new IllegalStateException("a channel's input can be subscribed to once (rule 1.9)"));
            return;
        }
        subscribed = true;
        subscriber = s;
        s.onSubscribe(new Flow.Subscription() {
            @Override
            public void request(long n) {
                endpoint.runOnLoop(() -> requested(n));
            }

            @Override
            public void cancel() {
                endpoint.runOnLoop(ChannelInput.this::cancelled);
            }
        });
        if (ended) {
            deliverEnd();
        }
    }

    private void requested(long n) {
        if (subscriber == null || ended) {
            return;
        }
        if (n <= 0) {
            Flow.Subscriber<? super T> s = subscriber;
            cancelled();
            s.onError(new IllegalArgumentException("rule 3.9: request(" + n + ") must be positive"));
            return;
        }
        pending = io.rstreams.wire.Connection.addDemand(pending, n);
        if (!requestQueued) {
            requestQueued = true;
            endpoint.execute(this::sendRequest); // after what this turn does: its other requests add up
        }
    }

    private void sendRequest() {
        requestQueued = false;
        long n = pending;
        pending = 0;
        if (n > 0 && !ended && subscriber != null) {
            endpoint.requestInput(id, n);
        }
    }

    private void cancelled() {
        subscriber = null;
        if (!ended) {
            ended = true;
            endpoint.cancelInput(id);
        }
    }

    /** The opener's element (I/O thread). */
    void element(byte[] data) {
        Flow.Subscriber<? super T> s = subscriber;
        if (ended || s == null) {
            return;
        }
        T value;
        try {
            value = decode.apply(data);
        } catch (RuntimeException e) {
            cancelled();
            s.onError(e);
            return;
        }
        try {
            s.onNext(value);
        } catch (RuntimeException e) { // rule 2.13: the subscriber broke; its input is cancelled
            System.getLogger("io.rstreams.net").log(System.Logger.Level.WARNING, "a channel's input subscriber threw in onNext", e);
            cancelled();
        }
    }

    /** The opener ended the input: {@code error} null for inputComplete, else inputError's text (I/O thread). */
    void endedByOpener(String error) {
        end(error == null ? null : new ChannelInputException(error));
    }

    /**
     * A split input element grew past max_element_size (§21.6): the input fails with a
     * {@link io.rstreams.wire.ProtocolException} carrying {@code reason}, the inputCancel already
     * sent by the connection; the output goes on (I/O thread).
     */
    void tooLarge(String reason) {
        end(new io.rstreams.wire.ProtocolException(reason, io.rstreams.wire.ErrorCode.LIMIT_EXCEEDED));
    }

    /** The output ended first, or the channel was refused: a running input fails (§21.5; I/O thread). */
    void outputEnded() {
        end(new IllegalStateException(OUTPUT_ENDED));
    }

    private void end(Throwable why) {
        if (ended) {
            return;
        }
        ended = true;
        end = why;
        if (subscriber != null) {
            deliverEnd();
        }
    }

    private void deliverEnd() {
        Flow.Subscriber<? super T> s = subscriber;
        subscriber = null;
        if (s == null) {
            return; // it cancelled
        }
        try {
            if (end == null) {
                s.onComplete();
            } else {
                s.onError(end);
            }
        } catch (RuntimeException e) {
            System.getLogger("io.rstreams.net").log(System.Logger.Level.WARNING, "a channel's input subscriber threw at its end", e);
        }
    }

    private static final Flow.Subscription NOTHING = new Flow.Subscription() {
        @Override
        public void request(long n) {}

        @Override
        public void cancel() {}
    };
}
