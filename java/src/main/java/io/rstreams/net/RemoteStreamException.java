package io.rstreams.net;

import io.rstreams.wire.ErrorCode;
import java.util.OptionalLong;

/**
 * A remote publisher signalled onError, or refused the subscription; the message is its text
 * and {@link #code} the error code that came with it (extension error-codes, PROTOCOL.md §19).
 *
 * <p>A served publisher signals a code the same way: failing its subscriber with
 * {@code new RemoteStreamException("overloaded", ErrorCode.UNAVAILABLE)} sends code 8 with the
 * text {@code RemoteStreamException: overloaded} (a served publisher's failure is sent as its
 * simple class name, a colon and its message, as rstreams sends it); any other error is sent with code 1 (application), and a relayed
 * {@code RemoteStreamException} keeps the code it came with.
 */
public class RemoteStreamException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final String publisher;
    private final Long code;

    RemoteStreamException(String publisher, String error, Long code) {
        super(error);
        this.publisher = publisher;
        this.code = code;
    }

    /**
     * An error for a served publisher to signal with a code of the registry (§19.2).
     *
     * @param message the onError's text
     * @param code its code, e.g. {@link ErrorCode#UNAVAILABLE}
     */
    public RemoteStreamException(String message, ErrorCode code) {
        this(null, message, code.value());
    }

    /** The name that was subscribed to (null for one a served publisher made). */
    public String publisher() {
        return publisher;
    }

    /** The error code that came with the onError (§19.2); empty when the peer sent none. */
    public OptionalLong code() {
        return code == null ? OptionalLong.empty() : OptionalLong.of(code);
    }

    /** The registry's entry for {@link #code}; null without a code or for one the registry does not list. */
    public ErrorCode errorCode() {
        return code == null ? null : ErrorCode.of(code);
    }
}
