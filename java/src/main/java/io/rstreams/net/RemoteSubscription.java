package io.rstreams.net;

import io.rstreams.wire.Connection;
import io.rstreams.wire.ContentTypes;
import io.rstreams.wire.Credentials;
import io.rstreams.wire.FrameType;
import io.rstreams.wire.SubscribeMetadata;
import java.util.concurrent.Flow;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One subscription this end made on a peer's publisher. Calls from the subscriber (any thread)
 * become tasks on the connection's I/O thread; everything else runs on that thread, so the
 * subscriber's signals are serial (rule 1.3). A request made inside onNext only adds to the
 * pending demand, which a task sends later: re-entrancy stays bounded (rule 3.3).
 */
final class RemoteSubscription<T> implements Flow.Subscription {
    private static final System.Logger LOG = System.getLogger("io.rstreams.net");

    private final Endpoint endpoint;
    private final String name;
    private final Codec<T> codec;
    private final Credentials credentials; // this subscribe's own (§15.4), or null; never shown
    private final RemotePublisher<T> publisher; // told the announced media type (§17.2)
    private final SubscribeMetadata metadata; // sent with the subscribe (§18.1), or null
    private final boolean metadataRequired;
    private final ChannelSender<?> input; // a channel's input (§21), or null: a plain subscription
    private final AtomicLong pending = new AtomicLong();
    private final AtomicBoolean demandTaskQueued = new AtomicBoolean();
    private volatile Flow.Subscriber<? super T> subscriber;
    private volatile boolean cancelled;
    // I/O thread only:
    private long id = -1;
    private boolean done;

    RemoteSubscription(RemotePublisher<T> publisher, Endpoint endpoint, String name, Codec<T> codec, Credentials credentials,
            SubscribeMetadata metadata, boolean metadataRequired, Flow.Subscriber<? super T> subscriber) {
        this(publisher, endpoint, name, codec, credentials, metadata, metadataRequired, subscriber, null);
    }

    RemoteSubscription(RemotePublisher<T> publisher, Endpoint endpoint, String name, Codec<T> codec, Credentials credentials,
            SubscribeMetadata metadata, boolean metadataRequired, Flow.Subscriber<? super T> subscriber, ChannelSender<?> input) {
        this.input = input;
        this.publisher = publisher;
        this.endpoint = endpoint;
        this.name = name;
        this.codec = codec;
        this.credentials = credentials;
        this.metadata = metadata;
        this.metadataRequired = metadataRequired;
        this.subscriber = subscriber;
    }

    void start() {
        endpoint.execute(this::open);
    }

    private void open() {
        Flow.Subscriber<? super T> s = subscriber;
        try {
            s.onSubscribe(this);
        } catch (Throwable t) {
            broken(s, t, "onSubscribe");
            return;
        }
        send();
    }

    /**
     * Sends the subscribe, unless the subscription or the connection ended. With credentials of
     * its own it waits for the peer's hello (subscribeCredentials is an extension message, never
     * sent before it, §4.4), and ends with an error if the hello leaves extension auth inactive.
     * With metadata it waits for the hello too (§18.1: never optimistic); a peer without
     * extension metadata gets the subscribe without them, or, with metadataRequired, none: the
     * subscription fails here.
     */
    private void send() {
        if (cancelled || done) {
            return;
        }
        RuntimeException closed = endpoint.closedError();
        if (closed != null) {
            finish(closed);
            return;
        }
        Connection conn = endpoint.connection();
        if ((credentials != null || metadata != null || input != null) && conn.state() == Connection.State.AWAITING_HELLO) {
            endpoint.afterHello(this::send);
            return;
        }
        if (credentials != null && !conn.activeExtensions().contains(FrameType.AUTH)) {
            finish(new IllegalStateException("can't subscribe to '" + name + "' with credentials: the peer does not offer "
                    + "extension auth (id 2) (PROTOCOL.md §15.2)"));
            return;
        }
        boolean withMetadata = metadata != null && conn.activeExtensions().contains(FrameType.METADATA);
        if (metadata != null && !withMetadata && metadataRequired) {
            finish(new IllegalStateException("can't subscribe to '" + name + "' with metadataRequired=true: the peer does not "
                    + "offer extension metadata (id 5) (PROTOCOL.md §18.1), so the entries would be dropped"));
            return;
        }
        if (input != null) { // a channel's subscribe is never optimistic (§21.1)
            if (!conn.activeExtensions().contains(FrameType.CHANNELS)) {
                finish(new IllegalStateException("can't open a channel: the peer does not offer extension channels (id 8) "
                        + "(PROTOCOL.md §21.1); its hello does not list it"));
                return;
            }
            id = conn.openChannel(name, pending.getAndSet(0), credentials, withMetadata ? metadata : null);
            input.opened(id);
        } else {
            id = conn.subscribe(name, pending.getAndSet(0), credentials, withMetadata ? metadata : null);
        }
        endpoint.consuming().put(id, this);
        endpoint.scheduleFlush();
    }

    @Override
    public void request(long n) {
        if (n <= 0) {
            endpoint.execute(() -> {
                if (!done) {
                    cancelRemote();
                    finish(new IllegalArgumentException("rule 3.9: request(n) needs an int n > 0 (non-positive subscription request), got " + n));
                }
            });
            return;
        }
        pending.accumulateAndGet(n, Connection::addDemand);
        if (demandTaskQueued.compareAndSet(false, true)) {
            endpoint.execute(this::sendDemand);
        }
    }

    private void sendDemand() {
        demandTaskQueued.set(false);
        if (id < 0 || done) {
            return; // open() sends what is pending as the initial demand
        }
        long n = pending.getAndSet(0);
        if (n > 0) {
            endpoint.connection().request(id, n);
            endpoint.scheduleFlush();
        }
    }

    @Override
    public void cancel() {
        cancelled = true;
        endpoint.execute(() -> {
            if (!done) {
                done = true;
                cancelRemote();
                subscriber = null; // rule 3.13: drop the reference
            }
        });
    }

    private void cancelRemote() {
        stopInput();
        if (id >= 0) {
            endpoint.connection().cancel(id);
            endpoint.consuming().remove(id);
            endpoint.scheduleFlush();
        }
    }

    /**
     * The peer's onSubscribe came, stating {@code contentType} (null: none, §17.1). An explicit
     * codec with a media type that is not the announced one fails the subscription here and
     * cancels it (§17.2); {@link Codec#BYTES} and codecs without a type take the bytes.
     */
    void onSubscribed(String contentType) {
        if (contentType == null || done) {
            return;
        }
        publisher.announced(contentType);
        String expected = codec.mediaType();
        if (expected != null && !ContentTypes.same(expected, contentType) && !ContentTypes.same(ContentTypes.OCTET_STREAM, contentType)) {
            cancelRemote();
            finish(new ContentTypeException(name, contentType, expected));
        }
    }

    void deliver(byte[] data) {
        Flow.Subscriber<? super T> s = subscriber;
        if (done || s == null) {
            return;
        }
        T element;
        try {
            element = codec.decode(data);
        } catch (RuntimeException e) {
            cancelRemote();
            finish(new IllegalArgumentException("can't decode an element of '" + name + "': " + e.getMessage(), e));
            return;
        }
        try {
            s.onNext(element);
        } catch (Throwable t) {
            broken(s, t, "onNext");
        }
    }

    void deliverPacked(long count, long size, byte[] data) {
        for (int k = 0; k < count && !done; k++) {
            byte[] one = new byte[(int) size];
            System.arraycopy(data, (int) (k * size), one, 0, (int) size);
            deliver(one);
        }
    }

    void completed() {
        Flow.Subscriber<? super T> s = subscriber;
        if (done || s == null) {
            return;
        }
        done = true;
        subscriber = null;
        stopInput();
        try {
            s.onComplete();
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.WARNING, "a Subscriber of '" + name + "' threw from onComplete (rule 2.13)", t);
        }
    }

    /** The stream ended with an error: the peer's onError, a local rule breach, or the connection's end. */
    void finish(Throwable error) {
        Flow.Subscriber<? super T> s = subscriber;
        if (done || s == null) {
            return;
        }
        done = true;
        subscriber = null;
        stopInput();
        try {
            s.onError(error);
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.WARNING, "a Subscriber of '" + name + "' threw from onError (rule 2.13)", t);
        }
    }

    /** A channel's output ended (terminal signal either way, cancel, the connection's end): its input ends with it (§21.5). */
    private void stopInput() {
        if (input != null) {
            input.stop();
        }
    }

    void failed(String error, Long code) {
        finish(new RemoteStreamException(name, error, code));
    }

    /** Rule 2.13: a subscriber that throws is broken; cancel its subscription and report it. */
    private void broken(Flow.Subscriber<? super T> s, Throwable t, String method) {
        LOG.log(System.Logger.Level.WARNING, "a Subscriber of '" + name + "' threw from " + method
                + " (rule 2.13); its subscription is cancelled", t);
        done = true;
        cancelled = true;
        cancelRemote();
        subscriber = null;
    }
}
