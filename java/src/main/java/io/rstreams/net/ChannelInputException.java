package io.rstreams.net;

/**
 * The opener of a channel failed its input (inputError, PROTOCOL.md §21.5): the channel factory's
 * input subscriber gets {@code onError} with this, its message the opener's text.
 */
public final class ChannelInputException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public ChannelInputException(String message) {
        super(message);
    }
}
