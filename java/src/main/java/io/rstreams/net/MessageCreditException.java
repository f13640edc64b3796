package io.rstreams.net;

/**
 * A send found no message credit and was not to wait for it (PROTOCOL.md §20.3): the peer's
 * handlers still hold every message it allowed. {@link RsioConnection#trySend} fails with it
 * at once, as rstreams' {@code send(..., wait=False)} raises {@code MessageCreditError}; so does
 * {@link RsioConnection#send} when {@value MessagePump#MAX_WAITING} sends of the connection
 * already wait for credit.
 */
public class MessageCreditException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    MessageCreditException(String message) {
        super(message);
    }
}
