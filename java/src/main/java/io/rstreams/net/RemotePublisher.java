package io.rstreams.net;

import io.rstreams.wire.Credentials;
import io.rstreams.wire.SubscribeMetadata;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.Flow;
import org.reactivestreams.FlowAdapters;

/**
 * A publisher on the other end of an RS.io connection, by name. Each {@link #subscribe} opens
 * one remote subscription (PROTOCOL.md §5): demand requested here travels to the peer, the
 * peer's elements come back decoded by the codec, and cancel is acknowledged by the peer before
 * the id is reused. Signals are delivered on the connection's I/O thread: a subscriber must not
 * block in them.
 *
 * @param <T> the element type its codec decodes
 */
public final class RemotePublisher<T> implements Flow.Publisher<T> {
    private final Endpoint endpoint;
    private final String name;
    private final Codec<T> codec;
    private final Credentials credentials; // each subscribe's own (§15.4), or null: the connection's
    private final SubscribeMetadata metadata; // sent with each subscribe (§18.1), or null
    private final boolean metadataRequired;
    private final java.util.function.Supplier<ChannelSender<?>> input; // a channel's input for each subscribe (§21), or null
    private volatile String contentType; // the last media type announced (§17.2), or null

    RemotePublisher(Endpoint endpoint, String name, Codec<T> codec, Credentials credentials) {
        this(endpoint, name, codec, credentials, null, false);
    }

    RemotePublisher(Endpoint endpoint, String name, Codec<T> codec, Credentials credentials, SubscribeMetadata metadata,
            boolean metadataRequired) {
        this(endpoint, name, codec, credentials, metadata, metadataRequired, null);
    }

    /**
     * A channel (§21.3): each subscribe opens one, {@code input} sending that channel's input; with
     * its own {@code credentials} (§15.4) and {@code metadata} (§18.1), each null for none.
     */
    static <T> RemotePublisher<T> channel(Endpoint endpoint, String name, Codec<T> codec, Credentials credentials,
            SubscribeMetadata metadata, boolean metadataRequired, java.util.function.Supplier<ChannelSender<?>> input) {
        return new RemotePublisher<>(endpoint, name, codec, credentials, metadata, metadataRequired, Objects.requireNonNull(input, "input"));
    }

    private RemotePublisher(Endpoint endpoint, String name, Codec<T> codec, Credentials credentials, SubscribeMetadata metadata,
            boolean metadataRequired, java.util.function.Supplier<ChannelSender<?>> input) {
        this.input = input;
        this.endpoint = endpoint;
        this.name = Objects.requireNonNull(name, "name");
        this.codec = Objects.requireNonNull(codec, "codec");
        this.credentials = credentials;
        this.metadata = metadata;
        this.metadataRequired = metadataRequired;
    }

    /**
     * The media type the peer announced for the elements (extension content-types, PROTOCOL.md
     * §17) in its answer to this publisher's latest subscribe that has one, as rstreams'
     * {@code RemoteSubscription.content_type}: set on the I/O thread before that subscription's
     * first element or end reaches its subscriber. Empty before any answer, and when the peer
     * states none (a publisher without a type, or a peer without the extension).
     */
    public Optional<String> contentType() {
        return Optional.ofNullable(contentType);
    }

    /** The metadata each subscribe is sent with (§18.1), or null for none. */
    public SubscribeMetadata metadata() {
        return metadata;
    }

    void announced(String mediaType) {
        contentType = mediaType;
    }

    /** The publisher name (with its parameters) subscribed to. */
    public String name() {
        return name;
    }

    /**
     * Subscribes {@code subscriber} to the remote publisher (rules 1.9, 2.1: nothing arrives
     * before it requests).
     *
     * @throws NullPointerException if {@code subscriber} is null (rule 1.9)
     */
    @Override
    public void subscribe(Flow.Subscriber<? super T> subscriber) {
        Objects.requireNonNull(subscriber, "rule 1.9: subscribe(null) is illegal; pass a Subscriber");
        new RemoteSubscription<>(this, endpoint, name, codec, credentials, metadata, metadataRequired, subscriber,
                input == null ? null : input.get()).start();
    }

    /** This publisher as an {@code org.reactivestreams.Publisher}. */
    public org.reactivestreams.Publisher<T> toReactiveStreams() {
        return FlowAdapters.toPublisher(this);
    }

    @Override
    public String toString() {
        return "RemotePublisher[" + name + " on " + endpoint.describe() + "]";
    }
}
