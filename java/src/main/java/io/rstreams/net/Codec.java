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

    /** Raw bytes, unchanged. */
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

    /** UTF-8 text (Python: {@code UTF8}). */
    Codec<String> UTF8 = new Codec<>() {
        @Override
        public byte[] encode(String element) {
            return element.getBytes(StandardCharsets.UTF_8);
        }

        @Override
        public String decode(byte[] data) {
            return new String(data, StandardCharsets.UTF_8);
        }
    };

    /** Signed 64-bit little-endian integers, 8 bytes each, sent packed (Python: {@code INT64}). */
    Codec<Long> INT64 = new Codec<>() {
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

    /** IEEE 754 doubles, little-endian, 8 bytes each, sent packed (Python: {@code FLOAT64}). */
    Codec<Double> FLOAT64 = new Codec<>() {
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
