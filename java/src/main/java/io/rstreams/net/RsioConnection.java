package io.rstreams.net;

import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One RS.io connection, from either end: subscribe to the peer's publishers by name with
 * {@link #publisher}; the publishers this end serves (its routes) are available to the peer at
 * the same time (PROTOCOL.md §1). Made by {@link RsioClient#connect} or handed to a server's
 * publisher factories and {@code onConnection} hook; there is no public constructor.
 */
public final class RsioConnection implements AutoCloseable {
    private final Endpoint endpoint;

    RsioConnection(Endpoint endpoint) {
        this.endpoint = endpoint;
    }

    Endpoint endpoint() {
        return endpoint;
    }

    /** The peer's publisher {@code name} (with parameters, e.g. {@code counter?to=5}), elements as raw bytes. */
    public RemotePublisher<byte[]> publisher(String name) {
        return new RemotePublisher<>(endpoint, name, Codec.BYTES, null);
    }

    /** The peer's publisher {@code name}, elements decoded by {@code codec}. */
    public <T> RemotePublisher<T> publisher(String name, Codec<T> codec) {
        return new RemotePublisher<>(endpoint, name, codec, null);
    }

    /**
     * The peer's publisher {@code name}, each subscribe sent with {@code credentials} of its own
     * (subscribeCredentials, PROTOCOL.md §15.4), which the server checks instead of the
     * connection's, as rstreams' {@code conn.publisher(name, auth=...)}: a server that refuses
     * them ends that subscription with {@link RemoteStreamException} code 3 (unauthenticated),
     * one whose authorization refuses them with code 4 (unauthorized), and the connection goes
     * on. Each subscribe waits for the server's hello (an extension message is never sent before
     * it, §4.4).
     *
     * @throws IllegalStateException if this connection does not authenticate itself: only a
     *     client built with {@link RsioClient.Builder#token}, {@link RsioClient.Builder#userPassword}
     *     or {@link RsioClient.Builder#credentials} lists extension auth in its hello (§15.2)
     */
    public <T> RemotePublisher<T> publisher(String name, Codec<T> codec, io.rstreams.wire.Credentials credentials) {
        java.util.Objects.requireNonNull(credentials, "credentials");
        if (!endpoint.authenticates()) {
            throw new IllegalStateException("per-subscription credentials need a client connection that authenticates itself: "
                    + "RsioClient.builder().token(...), userPassword(...) or credentials(...) (extension auth is listed only by "
                    + "a client that presents credentials, PROTOCOL.md §15.2)");
        }
        return new RemotePublisher<>(endpoint, name, codec, credentials);
    }

    /**
     * Sends a one-way message to the peer's handler {@code name} (extension messages, PROTOCOL.md
     * §20), e.g. {@code conn.send("events/click?x=1", body)}, as rstreams' {@code conn.send(name,
     * payload)}. The stage completes once the message is written within the peer's message credit
     * (§20.3): without credit it waits, in line with the connection's other sends, for the peer's
     * handlers to give some back; before the peer's hello it waits for the hello. Nothing says
     * whether the handler ran (a message the peer has no handler for is dropped there, §20.4).
     * The stage completes on the connection's I/O thread: what depends on it must not block.
     * It fails with {@link IllegalStateException} {@code can't send a message: the peer does not
     * offer extension messages (id 7) (PROTOCOL.md §20.1); ...} when the peer's hello does not
     * list id 7, with {@link ConnectionClosedException} when the connection ends first, and with
     * {@link MessageCreditException} when {@value MessagePump#MAX_WAITING} sends of this connection
     * are already unsent (wait for their stages before sending more).
     *
     * @throws IllegalArgumentException when the name and body together are above
     *     {@code max_string_length} (§20.2), 64 KiB by default
     */
    public java.util.concurrent.CompletionStage<Void> send(String name, byte[] body) {
        return endpoint.messages().send(name, body, true);
    }

    /** {@link #send(String, byte[])} with a UTF-8 body. */
    public java.util.concurrent.CompletionStage<Void> send(String name, String text) {
        return send(name, text.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    /**
     * {@link #send(String, byte[])} without waiting for credit: the stage fails at once with
     * {@link MessageCreditException} if the peer's credit is used up (or its hello has not come),
     * as rstreams' {@code conn.send(name, payload, wait=False)}.
     */
    public java.util.concurrent.CompletionStage<Void> trySend(String name, byte[] body) {
        return endpoint.messages().send(name, body, false);
    }

    /**
     * The peer's publisher {@code name}, each subscribe sent with {@code metadata} (extension
     * metadata, PROTOCOL.md §18: {@code traceparent}, {@code x-tenant}, {@code accept}, ...),
     * which the serving side's authorize hook and publisher factory see, as rstreams'
     * {@code conn.publisher(name, metadata=...)} and JavaScript's {@code {metadata}} option. A
     * subscribe with metadata waits for the peer's hello (never optimistic, §18.1); to a peer that
     * does not offer the extension it goes without them (see the overload with
     * {@code metadataRequired}).
     */
    public <T> RemotePublisher<T> publisher(String name, Codec<T> codec, io.rstreams.wire.SubscribeMetadata metadata) {
        return publisher(name, codec, metadata, false);
    }

    /**
     * {@link #publisher(String, Codec, io.rstreams.wire.SubscribeMetadata)}; with
     * {@code metadataRequired} true (rstreams' {@code metadata_required=True}), a subscribe to a
     * peer that does not offer extension metadata is not sent at all: the subscription fails with
     * {@code IllegalStateException("can't subscribe to 'NAME' with metadataRequired=true: the peer
     * does not offer extension metadata (id 5) (PROTOCOL.md §18.1), ...")}, for entries that carry
     * security or routing.
     */
    public <T> RemotePublisher<T> publisher(String name, Codec<T> codec, io.rstreams.wire.SubscribeMetadata metadata,
            boolean metadataRequired) {
        java.util.Objects.requireNonNull(metadata, "metadata");
        return new RemotePublisher<>(endpoint, name, codec, null, metadata, metadataRequired);
    }

    /**
     * The peer's publisher {@code name} with credentials of its own (as
     * {@link #publisher(String, Codec, io.rstreams.wire.Credentials)}) and metadata (as
     * {@link #publisher(String, Codec, io.rstreams.wire.SubscribeMetadata, boolean)}); the
     * subscribeCredentials, then the subscribeMetadata go right before each subscribe.
     */
    public <T> RemotePublisher<T> publisher(String name, Codec<T> codec, io.rstreams.wire.Credentials credentials,
            io.rstreams.wire.SubscribeMetadata metadata, boolean metadataRequired) {
        publisher(name, codec, credentials); // the same checks
        java.util.Objects.requireNonNull(metadata, "metadata");
        return new RemotePublisher<>(endpoint, name, codec, credentials, metadata, metadataRequired);
    }

    /**
     * Opens a channel on the peer's channel {@code name} (extension channels, PROTOCOL.md §21), as
     * rstreams' {@code conn.channel(name, input)} and JavaScript's: each subscribe to the returned
     * publisher opens one channel, whose output are its elements (raw bytes), and sends
     * {@code input} as the channel's input. {@code input} is subscribed at the peer's first
     * inputRequest and asked for no more than the input demand the peer grants, only while the
     * connection takes more, at most 64 elements and about 1 MiB of them per event-loop turn
     * (§21.4: the grant is a permission, not a reason to fill the write buffer, so a peer that
     * grants much and reads nothing holds the input back); an element above 64 KiB travels
     * split as inputNextPart ... inputNext (extension input-parts, §21.6); its completion or failure is sent as inputComplete or
     * inputError ({@code "ClassName: message"}, §21.5). The peer's inputCancel cancels the
     * input's subscription, and so does the end of the output (its completion or error, a cancel,
     * the connection's end: the input never outlives the channel, §21.5). The subscribe waits for
     * the peer's hello (never optimistic, §21.1); a peer that does not offer extension channels
     * (id 8) fails the subscription with {@code IllegalStateException("can't open a channel: the
     * peer does not offer extension channels (id 8) (PROTOCOL.md §21.1); its hello does not list
     * it")}, nothing sent. An unknown channel fails it with {@link RemoteStreamException} {@code
     * no channel named 'PATH' (PROTOCOL.md §21.3)}, code 2.
     */
    public RemotePublisher<byte[]> channel(String name, Flow.Publisher<byte[]> input) {
        return channel(name, input, Codec.BYTES, Codec.BYTES);
    }

    /** {@link #channel(String, Flow.Publisher)} with input and output elements coded by {@code codec}. */
    public <T> RemotePublisher<T> channel(String name, Flow.Publisher<? extends T> input, Codec<T> codec) {
        return channel(name, input, codec, codec);
    }

    /** {@link #channel(String, Flow.Publisher)} with input elements encoded by {@code inputCodec}, output ones decoded by {@code outputCodec}. */
    public <I, O> RemotePublisher<O> channel(String name, Flow.Publisher<? extends I> input, Codec<I> inputCodec, Codec<O> outputCodec) {
        return channel(name, input, inputCodec, outputCodec, null, null, false);
    }

    /**
     * {@link #channel(String, Flow.Publisher, Codec, Codec)}, each channel's subscribe sent with
     * {@code metadata} (extension metadata, PROTOCOL.md §18), which the serving side's authorize
     * hook and channel factory see, as for {@link #publisher(String, Codec,
     * io.rstreams.wire.SubscribeMetadata)} (and JavaScript's {@code channel(name, input,
     * {metadata})}); to a peer without the extension the subscribe goes without them.
     */
    public <I, O> RemotePublisher<O> channel(String name, Flow.Publisher<? extends I> input, Codec<I> inputCodec, Codec<O> outputCodec,
            io.rstreams.wire.SubscribeMetadata metadata) {
        java.util.Objects.requireNonNull(metadata, "metadata");
        return channel(name, input, inputCodec, outputCodec, null, metadata, false);
    }

    /**
     * {@link #channel(String, Flow.Publisher, Codec, Codec)}, each channel's subscribe sent with
     * {@code credentials} of its own (subscribeCredentials, PROTOCOL.md §15.4; null: the
     * connection's) and {@code metadata} (§18; null: none), as {@link #publisher(String, Codec,
     * io.rstreams.wire.Credentials, io.rstreams.wire.SubscribeMetadata, boolean)} sends them (and
     * JavaScript's {@code {auth, metadata}}): the channel mark, the subscribeCredentials, the
     * subscribeMetadata, then the subscribe (§21.3). The server authorizes a channel's subscribe
     * as any other (§15.4): refused, the output fails with {@link RemoteStreamException} code 4
     * and nothing of the input is sent.
     *
     * @throws IllegalStateException for credentials on a connection that does not authenticate
     *     itself, as {@link #publisher(String, Codec, io.rstreams.wire.Credentials)}
     */
    public <I, O> RemotePublisher<O> channel(String name, Flow.Publisher<? extends I> input, Codec<I> inputCodec, Codec<O> outputCodec,
            io.rstreams.wire.Credentials credentials, io.rstreams.wire.SubscribeMetadata metadata, boolean metadataRequired) {
        java.util.Objects.requireNonNull(input, "input");
        java.util.Objects.requireNonNull(inputCodec, "inputCodec");
        if (credentials != null) {
            publisher(name, outputCodec, credentials); // the same checks
        }
        return RemotePublisher.channel(endpoint, name, outputCodec, credentials, metadata, metadata != null && metadataRequired,
                () -> new ChannelSender<I>(endpoint, input, inputCodec));
    }

    /** The extension ids active on this connection (empty until the peer's hello arrived), PROTOCOL.md §4.4. */
    public Set<Long> activeExtensions() {
        return endpoint.connection().activeExtensions();
    }

    /** The peer's address, for logs. */
    public String remoteAddress() {
        return endpoint.describe();
    }

    /** Whether the connection is still open (no goodbye, no error, transport up). */
    public boolean isOpen() {
        return endpoint.closedError() == null && !endpoint.closedFuture().isDone();
    }

    /** Completes when the transport has closed, however the connection ended. */
    public CompletableFuture<Void> onClose() {
        return endpoint.closedFuture();
    }

    /**
     * Says goodbye (PROTOCOL.md §9.1): every stream in both directions ends, local subscribers
     * with {@link ConnectionClosedException}; the peer's input is still read (anything but its
     * goodbye discarded) and the transport closes once the peer's answering goodbye arrives or
     * its input ends, or after five seconds (as rstreams' CLOSE_TIMEOUT); a protocol violation
     * by the peer ends the wait too, the transport then closing as after an error goodbye (its
     * input discarded until the peer closes, two seconds at most). Before the
     * peer's hello no answer is awaited (it may not speak RS.io): the transport closes once the
     * peer ends its input, after two seconds (the linger time) at most. Completes when the
     * transport has closed.
     */
    public CompletableFuture<Void> closeAsync() {
        return endpoint.closeAsync("");
    }

    /**
     * {@link #closeAsync()} and waits for the transport to close (after five seconds at most, as
     * there). Called on the connection's own I/O thread (from one of its callbacks), it starts the
     * close and returns at once: that thread does the close once the callback returns.
     */
    @Override
    public void close() {
        if (endpoint.onLoop()) {
            closeAsync();
            return;
        }
        try {
            closeAsync().get(2 * Endpoint.CLOSE_MILLIS, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            // closed as far as this end is concerned: the channel is closed at the close timeout
        }
    }

    @Override
    public String toString() {
        return "RsioConnection[" + remoteAddress() + "]";
    }
}
