package io.rstreams.net;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * How elements become bytes on the wire and back, the same encodings as the Python side's
 * {@code rstreams.net} codecs.
 *
 * @param <T> the element type
 */
public interface Codec<T> {
    /** The element's bytes; never null. */
    byte[] encode(T element);

    /** The element these bytes encode; never null. */
    T decode(byte[] data);

    /** 0 for elements of any size; n &gt; 0 if every element is exactly n bytes (sent packed, PROTOCOL.md §7). */
    default int elementSize() {
        return 0;
    }

    /**
     * The media type of the elements (extension content-types, PROTOCOL.md §17), as rstreams'
     * {@code Codec.media_type}: a route with this codec states it to peers that offer the
     * extension, and a subscription with this codec fails with {@link ContentTypeException} if the
     * publisher announces another (§17.2). null: none ({@link #BYTES}, and codecs of your own
     * unless they say).
     */
    default String mediaType() {
        return null;
    }

    /**
     * This codec with the media type {@code mediaType} (§17.1), as rstreams'
     * {@code with_codec(target, codec, content_type=...)}: {@code Codec.BYTES.withContentType("image/png")}.
     *
     * @throws IllegalArgumentException naming the rule if {@code mediaType} is not a media type of §17.1
     */
    default Codec<T> withContentType(String mediaType) {
        String type = io.rstreams.wire.ContentTypes.check(mediaType);
        Codec<T> codec = this;
        return new Codec<>() {
            @Override
            public byte[] encode(T element) {
                return codec.encode(element);
            }

            @Override
            public T decode(byte[] data) {
                return codec.decode(data);
            }

            @Override
            public int elementSize() {
                return codec.elementSize();
            }

            @Override
            public String mediaType() {
                return type;
            }
        };
    }

    /** Raw bytes, unchanged; no media type: a subscription with it takes the bytes whatever is announced. */
    Codec<byte[]> BYTES = new Codec<>() {
        @Override
        public byte[] encode(byte[] element) {
            return element;
        }

        @Override
        public byte[] decode(byte[] data) {
            return data;
        }
    };

    /** UTF-8 text, {@code text/plain; charset=utf-8} (Python: {@code UTF8}). */
    Codec<String> UTF8 = new Codec<>() {
        @Override
        public String mediaType() {
            return io.rstreams.wire.ContentTypes.TEXT_UTF8;
        }

        @Override
        public byte[] encode(String element) {
            return element.getBytes(StandardCharsets.UTF_8);
        }

        @Override
        public String decode(byte[] data) {
            return new String(data, StandardCharsets.UTF_8);
        }
    };

    /**
     * One JSON text per element, {@code application/json} (PROTOCOL.md §17.3; Python: {@code JSON},
     * JavaScript: {@code decode: "json"}): maps, lists, strings, numbers ({@code Long},
     * {@code BigInteger} past it, {@code Double}), booleans, and null inside them; written
     * compact with non-ASCII characters escaped, as rstreams writes it. Decoding refuses what is
     * not one JSON text, and a bare {@code null} (no Flow element is null). The types each way are
     * listed in the codec's own documentation ({@code JsonCodec}).
     */
    Codec<Object> JSON = new JsonCodec();

    /** Signed 64-bit little-endian integers, 8 bytes each, sent packed, {@code application/vnd.rsio.int64le} (Python: {@code INT64}). */
    Codec<Long> INT64 = new Codec<>() {
        @Override
        public String mediaType() {
            return io.rstreams.wire.ContentTypes.INT64_LE;
        }

        @Override
        public byte[] encode(Long element) {
            return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(element).array();
        }

        @Override
        public Long decode(byte[] data) {
            if (data.length != 8) {
                throw new IllegalArgumentException("an INT64 element is 8 bytes, got " + data.length);
            }
            return ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN).getLong();
        }

        @Override
        public int elementSize() {
            return 8;
        }
    };

    /** IEEE 754 doubles, little-endian, 8 bytes each, sent packed, {@code application/vnd.rsio.float64le} (Python: {@code FLOAT64}). */
    Codec<Double> FLOAT64 = new Codec<>() {
        @Override
        public String mediaType() {
            return io.rstreams.wire.ContentTypes.FLOAT64_LE;
        }

        @Override
        public byte[] encode(Double element) {
            return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putDouble(element).array();
        }

        @Override
        public Double decode(byte[] data) {
            if (data.length != 8) {
                throw new IllegalArgumentException("a FLOAT64 element is 8 bytes, got " + data.length);
            }
            return ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN).getDouble();
        }

        @Override
        public int elementSize() {
            return 8;
        }
    };
}
