package io.rstreams.net;

/**
 * The connection under a stream ended before the stream did: closed by this end, by the peer's
 * goodbye, by a protocol error (the message is the goodbye's reason) or by the transport.
 */
public class ConnectionClosedException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    ConnectionClosedException(String message) {
        super(message);
    }
}
