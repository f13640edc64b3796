package io.rstreams.net;

import io.rstreams.wire.ErrorCode;
import java.util.OptionalLong;

/**
 * The connection under a stream ended before the stream did: closed by this end, by the peer's
 * goodbye, by a protocol error (the message is the goodbye's reason) or by the transport.
 * {@link #code} is the goodbye's error code (extension error-codes, PROTOCOL.md §19): the one
 * the peer said goodbye with, or the one this end sent for the peer's violation.
 */
public class ConnectionClosedException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final Long code;

    ConnectionClosedException(String message) {
        this(message, null);
    }

    ConnectionClosedException(String message, Long code) {
        super(message);
        this.code = code;
    }

    /** The goodbye's error code (§19.2); empty without one (no goodbye, or a goodbye without a code). */
    public OptionalLong code() {
        return code == null ? OptionalLong.empty() : OptionalLong.of(code);
    }

    /** The registry's entry for {@link #code}; null without a code or for one the registry does not list. */
    public ErrorCode errorCode() {
        return code == null ? null : ErrorCode.of(code);
    }
}
