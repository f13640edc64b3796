package io.rstreams.wire;

/**
 * The registry of extension error-codes (PROTOCOL.md §19.2): a number beside the text of an
 * onError or a goodbye. Codes 0-1023 are the document's (the unlisted ones reserved), 1024 and
 * above are for private use; a code this enum does not list is kept as its number.
 */
public enum ErrorCode {
    /** goodbye: an orderly close, nothing failed. */
    NORMAL(0),
    /** The publisher itself signalled the error. */
    APPLICATION(1),
    /** No publisher has the subscribed name (§5.5). */
    UNKNOWN_PUBLISHER(2),
    /** Credentials are missing or were refused (§15.3, §15.4). */
    UNAUTHENTICATED(3),
    /** The principal may not subscribe to that name (§15.4). */
    UNAUTHORIZED(4),
    /** request(0), request(&gt;= 2**63) or initialDemand &gt;= 2**63 (rule 3.9, §6.2). */
    INVALID_DEMAND(5),
    /** A rule of PROTOCOL.md was broken (§10). */
    PROTOCOL_VIOLATION(6),
    /** A limit of §11 was exceeded. */
    LIMIT_EXCEEDED(7),
    /** Cannot serve now (shutting down, overloaded); trying later may work. */
    UNAVAILABLE(8),
    /** The serving side failed, not the request (e.g. a publisher factory threw). */
    INTERNAL(9),
    /** The serving side ended the stream on its own decision. */
    CANCELLED(10),
    /** Something did not happen in time (idle, authentication timeouts). */
    TIMEOUT(11);

    private static final ErrorCode[] BY_VALUE = values();

    private final long value;

    ErrorCode(long value) {
        this.value = value;
    }

    /** @return the number sent on the wire */
    public long value() {
        return value;
    }

    /**
     * The registry's entry for a code received.
     *
     * @param code a code as received (an unsigned 64-bit value)
     * @return its entry, or null for a code the registry does not list (reserved or private)
     */
    public static ErrorCode of(long code) {
        return code >= 0 && code < BY_VALUE.length ? BY_VALUE[(int) code] : null;
    }
}
