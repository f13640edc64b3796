package io.rstreams.net;

/**
 * A subscription's explicit codec decodes another media type than the publisher announced
 * (extension content-types, PROTOCOL.md §17.2), as rstreams' {@code ContentTypeError}: the
 * elements are not decoded as the codec's type, the subscription is cancelled and its
 * subscriber fails with this exception, naming both types. {@link Codec#BYTES} takes the bytes
 * whatever is announced; {@code application/octet-stream} announced is as good as nothing.
 */
public class ContentTypeException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final String publisher;
    private final String announced;
    private final String expected;

    ContentTypeException(String publisher, String announced, String expected) {
        super("publisher '" + publisher + "' announces '" + announced + "' (PROTOCOL.md §17.2), but the codec given decodes '"
                + expected + "'; subscribe with Codec.BYTES for the bytes");
        this.publisher = publisher;
        this.announced = announced;
        this.expected = expected;
    }

    /** The name subscribed to. */
    public String publisher() {
        return publisher;
    }

    /** The media type the publisher announced. */
    public String announced() {
        return announced;
    }

    /** The media type of the codec given. */
    public String expected() {
        return expected;
    }
}
