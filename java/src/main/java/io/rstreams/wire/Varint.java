package io.rstreams.wire;

/**
 * Unsigned base-128 varints, the protobuf varint (PROTOCOL.md §2.1).
 *
 * <p>Values are Java {@code long}s read as unsigned 64-bit integers: a value of 2**63 or more
 * is a negative {@code long}. Encodings are at most 10 bytes and must be minimal.
 */
public final class Varint {
    /** The most bytes a varint may take (a value up to 2**64 - 1). */
    public static final int MAX_BYTES = 10;

    private Varint() {}

    /** The number of bytes {@link #write} uses for {@code value} (unsigned). */
    public static int size(long value) {
        int bits = 64 - Long.numberOfLeadingZeros(value);
        return bits == 0 ? 1 : (bits + 6) / 7;
    }

    /** Writes {@code value} (unsigned) at {@code out[pos]}; returns the position after it. */
    public static int write(long value, byte[] out, int pos) {
        while ((value & ~0x7FL) != 0) {
            out[pos++] = (byte) ((value & 0x7F) | 0x80);
            value >>>= 7;
        }
        out[pos++] = (byte) value;
        return pos;
    }

    /**
     * Reads the varint at {@code buf[pos]}, not past {@code end}.
     *
     * @return the value, with the position after it in {@code next[0]}
     * @throws Incomplete if the varint runs past {@code end}
     * @throws ProtocolException if it is over-long, above 2**64 - 1 or not minimal (§2.1)
     */
    static long read(byte[] buf, int pos, int end, int[] next) throws Incomplete, ProtocolException {
        if (pos >= end) {
            throw Incomplete.UNKNOWN;
        }
        int b = buf[pos] & 0xFF;
        if (b < 0x80) {
            next[0] = pos + 1;
            return b;
        }
        long result = b & 0x7F;
        int shift = 7;
        int start = pos++;
        while (true) {
            if (pos >= end) {
                throw Incomplete.UNKNOWN;
            }
            b = buf[pos++] & 0xFF;
            if (pos - start == MAX_BYTES && b > 0x01) {
                throw new ProtocolException("over-long varint: more than 10 bytes or a value above 2**64-1 (PROTOCOL.md §2.1)");
            }
            result |= (long) (b & 0x7F) << shift;
            if (b < 0x80) {
                if (b == 0) {
                    throw new ProtocolException("non-minimal varint encoding (trailing 0x00 byte) (PROTOCOL.md §2.1)");
                }
                next[0] = pos;
                return result;
            }
            if (pos - start >= MAX_BYTES) {
                throw new ProtocolException("over-long varint: more than 10 bytes or a value above 2**64-1 (PROTOCOL.md §2.1)");
            }
            shift += 7;
        }
    }

    /** Thrown by decoders when the input ends inside a frame: "need more data". */
    static final class Incomplete extends Exception {
        private static final long serialVersionUID = 1L;
        static final Incomplete UNKNOWN = new Incomplete();

        private Incomplete() {
            super(null, null, false, false);
        }
    }
}
