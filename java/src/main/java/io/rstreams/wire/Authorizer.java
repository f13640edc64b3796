package io.rstreams.wire;

/**
 * Whether a subscribe may go on (PROTOCOL.md §15.4), asked by a server that checks credentials
 * with the credentials the subscribe goes with (its own subscribeCredentials, else the
 * connection's), the publisher name as written (with its query) and the subscribe's metadata
 * (extension metadata, §18; {@link SubscribeMetadata#EMPTY} without any).
 */
@FunctionalInterface
public interface Authorizer {
    /** A subscribe's refusal: its onError text and code (§15.4, §19.2). */
    record Refusal(String text, long code) {}

    /**
     * @return null to let the subscribe go on, else its refusal (the connection goes on)
     */
    Refusal authorize(Credentials credentials, String name, SubscribeMetadata metadata);

    /**
     * The refusal of a subscribe the authorize hook refused, code 4: {@code unauthorized:
     * subscribe to 'PATH' is not allowed for this principal (PROTOCOL.md §15.4)}, PATH the name
     * up to its first '?' as written; the same text in every binding.
     */
    static Refusal unauthorized(String name) {
        return new Refusal(AuthGate.unauthorized(name), ErrorCode.UNAUTHORIZED.value());
    }
}
