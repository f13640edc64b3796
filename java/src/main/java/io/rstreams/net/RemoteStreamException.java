package io.rstreams.net;

/** A remote publisher signalled onError, or refused the subscription; the message is its text. */
public class RemoteStreamException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final String publisher;

    RemoteStreamException(String publisher, String error) {
        super(error);
        this.publisher = publisher;
    }

    /** The name that was subscribed to. */
    public String publisher() {
        return publisher;
    }
}
