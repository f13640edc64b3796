package io.rstreams.wire;

/**
 * The peer broke the protocol. The message is the goodbye reason sent to the peer: it names
 * the broken rule and its section of PROTOCOL.md, never internal details.
 */
public class ProtocolException extends Exception {
    private static final long serialVersionUID = 1L;

    /** @param reason what the peer did and the section it breaks */
    public ProtocolException(String reason) {
        super(reason);
    }
}
