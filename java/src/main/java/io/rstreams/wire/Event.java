package io.rstreams.wire;

import java.util.List;
import java.util.Set;

/**
 * What {@link Connection#receiveData} found, in order. Ids of {@link Subscribed}, {@link Demand}
 * and {@link Cancelled} are the peer's (subscriptions the peer made on our publishers); the
 * others carry our own ids (subscriptions we made), PROTOCOL.md §5.1.
 */
public sealed interface Event {

    /** The peer's hello: what it offers, and the extensions now active on the connection (§4.4). */
    record PeerHello(List<Long> extensions, Set<Long> active) implements Event {}

    /**
     * The peer subscribed to our publisher {@code name} (already checked against the limits), with
     * the entries of the subscribeMetadata that qualified it (extension metadata, §18.1;
     * {@link SubscribeMetadata#EMPTY} without one).
     */
    record Subscribed(long id, String name, long initialDemand, SubscribeMetadata metadata) implements Event {
        /** A subscribe without metadata. */
        public Subscribed(long id, String name, long initialDemand) {
            this(id, name, initialDemand, SubscribeMetadata.EMPTY);
        }
    }

    /** The peer added {@code n} to its demand on subscription {@code id}. */
    record Demand(long id, long n) implements Event {}

    /**
     * The peer's subscription {@code id} is over: it cancelled (reason null, already acknowledged),
     * or its request broke rule 3.9 (the onError is already sent). Cancel the local publisher.
     */
    record Cancelled(long id, String reason) implements Event {}

    /**
     * Our subscription {@code id} received onSubscribe, with the media type of the contentType
     * that qualified it (extension content-types, §17.1), or null when none was stated.
     */
    record OnSubscribed(long id, long elementSize, String contentType) implements Event {
        /** An onSubscribe without a stated type. */
        public OnSubscribed(long id, long elementSize) {
            this(id, elementSize, null);
        }
    }

    /** One element of our subscription {@code id} (an onNext, or a split element joined). */
    record Element(long id, byte[] data) implements Event {}

    /** {@code count} elements of {@code size} bytes back to back, from one onNextPacked (§7). */
    record Packed(long id, long count, long size, byte[] data) implements Event {}

    /** Our subscription {@code id} completed. */
    record Completed(long id) implements Event {}

    /**
     * Our subscription {@code id} failed: the peer's onError ({@code local} false), or this end
     * cancelled it because of what it received ({@code local} true, e.g. an element above the limit).
     * {@code code} is the peer's errorCode for that onError (extension error-codes, PROTOCOL.md §19),
     * null without one.
     */
    record Failed(long id, String error, boolean local, Long code) implements Event {
        /** A failure without an error code. */
        public Failed(long id, String error, boolean local) {
            this(id, error, local, null);
        }
    }

    /**
     * A message from the peer to this end's handler {@code name} (extension messages, §20.2); it
     * holds one credit until {@link Messages#handled} says it is over. {@code refusal}: why the
     * server's auth drops it (§20.4), or null.
     */
    record Message(String name, byte[] body, String refusal) implements Event {}

    /** The peer granted {@code count} more messages (§20.3): senders waiting for credit may go on. */
    record MessageCredit(long count) implements Event {}

    /**
     * The peer's subscribe {@code id}, whose {@link Subscribed} comes next, opens a channel
     * (extension channels, §21.3): serve it from a channel publisher, with an input.
     */
    record ChannelOpened(long id) implements Event {}

    /** What a channel's input message did (§21.4, §21.5): demand or a cancel at the opener, an element or the end at the publisher. */
    record ChannelInput(Channels.Input input) implements Event {}

    /** An extension message this core does not handle itself (auth, resume): type and payload. */
    record ExtensionMessage(int type, byte[] payload) implements Event {}

    /**
     * The connection is over. {@code error} is null for an orderly goodbye, else what broke:
     * the peer's violation (a goodbye with its text was queued) or an end of input without goodbye.
     * {@code reason} is the goodbye's reason, whoever sent it. {@code code} is the goodbye's error
     * code (extension error-codes, §19): the peer's goodbyeCode, or the code of the violation this
     * end said goodbye for while the extension was active; null without one.
     */
    record Closed(String reason, ProtocolException error, Long code) implements Event {
        /** A close without an error code. */
        public Closed(String reason, ProtocolException error) {
            this(reason, error, null);
        }
    }
}
