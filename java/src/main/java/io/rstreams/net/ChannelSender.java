package io.rstreams.net;

import io.rstreams.wire.Connection;
import java.util.concurrent.Flow;

/**
 * The input of a channel this end opened (PROTOCOL.md §21), sent from its input Publisher. The
 * Publisher is subscribed at the peer's first inputRequest and asked for no more than the input
 * demand the peer granted (§21.4), and only while the connection takes more (the channel below
 * Netty's high-water mark, as the serving streams produce): the grant is a permission, not a
 * reason to fill the write buffer (§6.3). Per event-loop turn it asks for at most
 * {@value #INPUT_WINDOW} elements and about {@value #WRITE_LIMIT} bytes of them by the sizes seen
 * so far (one element while none is known), as rstreams' opener does; the turn's write goes out
 * before the next turn asks again, and a channel that is not writable asks again when it is
 * (Endpoint's refill). Each element, encoded by the codec, goes as one inputNext, or split as
 * inputNextPart ... inputNext above 64 KiB (§21.6). Its completion or failure is sent as inputComplete or inputError (the
 * error's class name and message, as rstreams sends them, §21.5). The peer's inputCancel, and the
 * end of the channel's output (the tie, §21.5), cancel the input's subscription. Signals of the
 * input Publisher may come on any thread; everything else runs on the connection's I/O thread.
 */
final class ChannelSender<I> implements Flow.Subscriber<I> {
    /** Input elements requested from the input Publisher at a time, and per turn (as rstreams and JavaScript, §21.4). */
    static final int INPUT_WINDOW = 64;
    /** About the bytes of input elements asked for per turn (rstreams' WRITE_LIMIT, §21.4). */
    static final int WRITE_LIMIT = 1 << 20;

    private final Endpoint endpoint;
    private final Flow.Publisher<? extends I> source;
    private final Codec<I> codec;
    // I/O thread only:
    private long id = -1;
    private boolean subscribed; // the input Publisher was subscribed (at the first inputRequest)
    private boolean ended; // sent its end, cancelled by the peer, or the output ended
    private Flow.Subscription upstream;
    private long granted; // input demand granted by the peer and not yet requested upstream
    private long outstanding; // requested upstream and not yet received
    private long turn; // elements requested this turn: at most INPUT_WINDOW
    private long sent; // bytes sent this turn: about WRITE_LIMIT at most
    private long estimate; // bytes of an element (the largest recent one); 0: none seen yet
    private boolean waiting; // for the next turn, or for the channel to take more

    ChannelSender(Endpoint endpoint, Flow.Publisher<? extends I> source, Codec<I> codec) {
        this.endpoint = endpoint;
        this.source = source;
        this.codec = codec;
    }

    /** The channel was opened with subscriber id {@code id} (I/O thread). */
    void opened(long id) {
        this.id = id;
        endpoint.senders().put(id, this);
    }

    /** The peer granted {@code n} more input elements (inputRequest, I/O thread). */
    void granted(long n) {
        if (ended) {
            return;
        }
        granted = Connection.addDemand(granted, n);
        if (!subscribed) {
            subscribed = true;
            try {
                source.subscribe(this);
            } catch (RuntimeException e) { // rule 2.13 does not bind a Publisher; still, the input failed
                fail(e);
            }
            return;
        }
        pull();
    }

    /** The peer cancelled the input, or the channel's output ended, or the connection did (I/O thread): no message, the input's subscription is cancelled. */
    void stop() {
        if (ended) {
            return;
        }
        ended = true;
        endpoint.senders().remove(id, this);
        Flow.Subscription s = upstream;
        upstream = null;
        if (s != null) {
            cancel(s);
        }
    }

    private void pull() {
        Flow.Subscription s = upstream;
        if (ended || s == null) {
            return;
        }
        long want = allowed(sent, turn);
        if (want <= 0) {
            if (granted <= 0 || allowed(0, 0) <= 0) {
                return; // the peer's inputRequest, or an element requested arriving, pulls again
            }
            if (!waiting) { // this turn's elements or bytes are used: its write goes out first
                waiting = true;
                endpoint.execute(this::writable);
            }
            return;
        }
        if (!endpoint.writable()) {
            waiting = true; // Endpoint's refill, once the channel takes more, pulls again
            return;
        }
        granted -= want;
        outstanding += want;
        turn += want;
        try {
            s.request(want);
        } catch (RuntimeException e) {
            cancel(s);
            fail(e);
        }
    }

    /** Elements to request now, after {@code sentBytes} bytes and {@code asked} elements this turn. */
    private long allowed(long sentBytes, long asked) {
        long fits = 1; // no size known: one element, which teaches it
        if (estimate > 0) { // within WRITE_LIMIT by the estimate, one element a turn at least
            fits = (WRITE_LIMIT - sentBytes) / estimate;
            if (fits < 1 && sentBytes == 0) {
                fits = 1;
            }
        }
        fits = Math.min(fits, INPUT_WINDOW);
        // what is outstanding counts against the bytes and the window
        return Math.min(Math.min(granted, fits - outstanding), INPUT_WINDOW - asked);
    }

    /** A new turn, or the channel takes more again (Endpoint's refill): asks for more if it waited (I/O thread). */
    void writable() {
        if (waiting) {
            waiting = false;
            turn = 0;
            sent = 0;
            pull();
        }
    }

    @Override
    public void onSubscribe(Flow.Subscription subscription) {
        java.util.Objects.requireNonNull(subscription, "rule 2.13: onSubscribe(null)");
        endpoint.execute(() -> {
            if (ended || upstream != null) {
                cancel(subscription); // rule 2.5: a second subscription, or the input already ended
                return;
            }
            upstream = subscription;
            pull();
        });
    }

    @Override
    public void onNext(I item) {
        java.util.Objects.requireNonNull(item, "rule 2.13: onNext(null)");
        endpoint.execute(() -> {
            if (ended) {
                return;
            }
            if (outstanding <= 0) { // rule 1.1: more than requested
                Flow.Subscription s = upstream;
                upstream = null;
                if (s != null) {
                    cancel(s);
                }
                fail(new IllegalStateException("rule 1.1: the input Publisher signalled more elements than were requested"));
                return;
            }
            outstanding--;
            byte[] data;
            try {
                data = codec.encode(item);
                endpoint.connection().sendInput(id, data);
            } catch (RuntimeException e) { // an element the codec refuses, or too large to send (§21.2)
                Flow.Subscription s = upstream;
                upstream = null;
                if (s != null) {
                    cancel(s);
                }
                fail(e);
                return;
            }
            sent += data.length;
            estimate = data.length > estimate / 2 ? data.length : estimate / 2; // up at once, down by halves
            endpoint.scheduleFlush();
            if (outstanding <= INPUT_WINDOW / 2) {
                pull();
            }
        });
    }

    @Override
    public void onError(Throwable error) {
        java.util.Objects.requireNonNull(error, "rule 2.13: onError(null)");
        endpoint.execute(() -> fail(error));
    }

    @Override
    public void onComplete() {
        endpoint.execute(() -> end(null));
    }

    /** The input failed: inputError with the error's class name and message (§21.5). */
    private void fail(Throwable error) {
        String message = error.getMessage();
        end(error.getClass().getSimpleName() + ": " + (message == null ? "" : message));
    }

    private void end(String error) {
        if (ended) {
            return;
        }
        ended = true;
        upstream = null;
        endpoint.senders().remove(id, this);
        try {
            endpoint.connection().endInput(id, error);
        } catch (RuntimeException e) {
            return; // the connection ended: so did the channel
        }
        endpoint.scheduleFlush();
    }

    private static void cancel(Flow.Subscription s) {
        try {
            s.cancel();
        } catch (RuntimeException e) {
            System.getLogger("io.rstreams.net").log(System.Logger.Level.WARNING, "a channel's input Publisher threw from cancel (rule 3.15)", e);
        }
    }
}
