package io.rstreams.wire;

/**
 * The peer broke the protocol. The message is the goodbye reason sent to the peer: it names
 * the broken rule and its section of PROTOCOL.md, never internal details; {@link #code} is
 * the error code that goes with it when extension error-codes is active (§10, §19).
 */
public class ProtocolException extends Exception {
    private static final long serialVersionUID = 1L;
    private final ErrorCode code;

    /** @param reason what the peer did and the section it breaks (code 6, protocol violation) */
    public ProtocolException(String reason) {
        this(reason, ErrorCode.PROTOCOL_VIOLATION);
    }

    /**
     * @param reason what the peer did and the section it breaks
     * @param code the code §10's table gives it; null: a goodbye without a code
     */
    public ProtocolException(String reason, ErrorCode code) {
        super(reason);
        this.code = code;
    }

    /** A limit of §11 exceeded: code 7. */
    static ProtocolException limit(String reason) {
        return new ProtocolException(reason, ErrorCode.LIMIT_EXCEEDED);
    }

    /** @return the code of the goodbye this violation is answered with (§10), or null for none */
    public ErrorCode code() {
        return code;
    }
}
