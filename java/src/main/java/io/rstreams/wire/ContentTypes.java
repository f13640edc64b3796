package io.rstreams.wire;

import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * Extension content-types (PROTOCOL.md §17): the media type a publisher states for its elements,
 * in a contentType qualifier ({@code 0x90}) written right before the onSubscribe it qualifies.
 * Payload: {@code subscriber: varint}, then the media type as printable US-ASCII filling the rest
 * (1-255 bytes, {@code type/subtype} optionally followed by {@code ; name=value} parameters).
 * The built-in types of §17.3 are the constants below.
 */
public final class ContentTypes {
    /** Any bytes, no structure (§17.3): the same as stating nothing. */
    public static final String OCTET_STREAM = "application/octet-stream";
    /** UTF-8 text (§17.3). */
    public static final String TEXT_UTF8 = "text/plain; charset=utf-8";
    /** One JSON text in UTF-8 (§17.3). */
    public static final String JSON = "application/json";
    /** One MessagePack object (§17.3). */
    public static final String MSGPACK = "application/msgpack";
    /** One Arrow IPC stream (§17.3). */
    public static final String ARROW_STREAM = "application/vnd.apache.arrow.stream";
    /** A signed 64-bit integer, little-endian, elementSize 8 (§17.3). */
    public static final String INT64_LE = "application/vnd.rsio.int64le";
    /** An IEEE 754 binary64, little-endian, elementSize 8 (§17.3). */
    public static final String FLOAT64_LE = "application/vnd.rsio.float64le";
    /** Longest media type, in bytes (§17.1). */
    public static final int MAX_LENGTH = 255;

    private static final String TOKEN = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

    /** A received contentType: the subscriber id it is for and the media type. */
    public record Announced(long subscriber, String mediaType) {}

    private ContentTypes() {}

    /**
     * Why {@code text} is not a media type of §17.1 (printable US-ASCII, 1-255 bytes, starting
     * with {@code type/subtype}), or null when it is one; worded as rstreams words it.
     */
    public static String problem(String text) {
        if (text == null || text.isEmpty() || text.length() > MAX_LENGTH) {
            return "a media type is 1.." + MAX_LENGTH + " bytes, got " + (text == null ? 0 : text.length());
        }
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c < 0x20 || c > 0x7E) {
                return "a media type is printable US-ASCII";
            }
        }
        int semicolon = text.indexOf(';');
        String essence = (semicolon < 0 ? text : text.substring(0, semicolon)).strip();
        int slash = essence.indexOf('/');
        String kind = slash < 0 ? "" : essence.substring(0, slash);
        String sub = slash < 0 ? "" : essence.substring(slash + 1);
        if (kind.isEmpty() || sub.isEmpty() || !tokens(kind) || !tokens(sub)) {
            return "a media type starts with type/subtype, got " + quoted(essence);
        }
        return null;
    }

    /** Printable US-ASCII {@code text} quoted as Python's repr() quotes it. */
    static String quoted(String text) {
        char quote = text.indexOf('\'') >= 0 && text.indexOf('"') < 0 ? '"' : '\'';
        StringBuilder out = new StringBuilder().append(quote);
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == quote || c == '\\') {
                out.append('\\');
            }
            out.append(c);
        }
        return out.append(quote).toString();
    }

    private static boolean tokens(String s) {
        for (int i = 0; i < s.length(); i++) {
            if (TOKEN.indexOf(s.charAt(i)) < 0) {
                return false;
            }
        }
        return true;
    }

    /**
     * {@code mediaType}, checked for sending (§17.1).
     *
     * @throws IllegalArgumentException naming the rule if it is not a media type
     */
    public static String check(String mediaType) {
        String problem = problem(mediaType);
        if (problem != null) {
            throw new IllegalArgumentException("can't state the media type '" + mediaType + "': " + problem + " (PROTOCOL.md §17.1)");
        }
        return mediaType;
    }

    /** The form two media types are compared in (§17.1): lower case, no spaces around {@code ;} and {@code =}. */
    public static String normalForm(String mediaType) {
        StringBuilder out = new StringBuilder();
        String[] parts = mediaType.toLowerCase(Locale.ROOT).split(";", -1);
        for (int i = 0; i < parts.length; i++) {
            if (i > 0) {
                out.append(';');
            }
            String[] sides = parts[i].split("=", -1);
            for (int k = 0; k < sides.length; k++) {
                if (k > 0) {
                    out.append('=');
                }
                out.append(sides[k].strip());
            }
        }
        return out.toString();
    }

    /** Whether {@code a} and {@code b} name the same media type (§17.1): equal in their normal form, parameters in order. */
    public static boolean same(String a, String b) {
        return normalForm(a).equals(normalForm(b));
    }

    /** A contentType payload (§17.1): the subscriber id, then the media type's bytes (checked by {@link #check}). */
    public static byte[] encode(long subscriber, String mediaType) {
        byte[] text = mediaType.getBytes(StandardCharsets.US_ASCII);
        byte[] payload = new byte[Varint.size(subscriber) + text.length];
        System.arraycopy(text, 0, payload, Varint.write(subscriber, payload, 0), text.length);
        return payload;
    }

    /**
     * A received contentType payload.
     *
     * @throws ProtocolException citing §17.1 if it is malformed (a bad subscriber varint, bytes
     *     outside 0x20-0x7E, no {@code type/subtype}, more than 255 bytes or none)
     */
    public static Announced decode(byte[] payload) throws ProtocolException {
        int[] next = new int[1];
        long subscriber;
        try {
            subscriber = Varint.read(payload, 0, payload.length, next);
        } catch (Varint.Incomplete | ProtocolException e) {
            throw malformed("subscriber id");
        }
        for (int i = next[0]; i < payload.length; i++) {
            if (payload[i] < 0) { // above 0x7F; a control character is problem()'s (printable), as rstreams checks
                throw malformed("not US-ASCII");
            }
        }
        String text = new String(payload, next[0], payload.length - next[0], StandardCharsets.US_ASCII);
        String problem = problem(text);
        if (problem != null) {
            throw malformed(problem);
        }
        return new Announced(subscriber, text);
    }

    private static ProtocolException malformed(String what) {
        return new ProtocolException("malformed contentType payload (" + what + ") (PROTOCOL.md §17.1)");
    }
}
