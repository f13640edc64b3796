package io.rstreams.net;

import io.netty.buffer.ByteBuf;
import io.rstreams.wire.FrameType;
import io.rstreams.wire.ProtocolException;
import io.rstreams.wire.Varint;
import java.nio.charset.StandardCharsets;

/** The messages of extension resume that travel outside the session's streams (PROTOCOL.md §16.2), and its limits. */
final class ResumeFrames {
    /** Attempts a client makes before the session fails (§16.7). */
    static final int ATTEMPTS = 8;
    /** First backoff between attempts, doubling (§16.7). */
    static final long BACKOFF_MILLIS = 50;
    /** Largest backoff (§16.7). */
    static final long MAX_BACKOFF_MILLIS = 2000;
    /** How long a new transport may take to answer a resume (§16.7). */
    static final long ATTEMPT_TIMEOUT_MILLIS = 5000;
    /** Largest payload of resume / resumed / resumeRefused (§16.7). */
    static final int MAX_PAYLOAD = 256;

    private ResumeFrames() {}

    static byte[] varint(long value) {
        byte[] out = new byte[Varint.size(value)];
        Varint.write(value, out, 0);
        return out;
    }

    /** The one varint a resumeAck or resumed ({@code what}) payload holds (§16.2), refused in rstreams' words. */
    static long position(byte[] payload, String what) throws ProtocolException {
        int[] at = {0};
        long p = readVarint(payload, at, what);
        if (at[0] != payload.length) {
            throw malformed(what + ": " + (payload.length - at[0]) + " byte(s) after the position");
        }
        return p;
    }

    /** One varint of a complete payload ({@code what} names it): running out of bytes is malformed, not "wait". */
    private static long readVarint(byte[] b, int[] at, String what) throws ProtocolException {
        long value;
        try {
            value = varint(b, at, b.length);
        } catch (ProtocolException e) {
            throw malformed(what + ": " + e.getMessage());
        }
        if (at[0] < 0) {
            throw malformed(what + ": the payload ends inside a varint");
        }
        return value;
    }

    /**
     * The varint at {@code at[0]} by §2.1's rules, as rstreams reads it: {@code at[0]} moves past it,
     * or becomes -1 when the bytes end inside it. A malformed one is a ProtocolException whose
     * message is rstreams' words for its fault, without a section (the resume texts cite §16.2).
     */
    private static long varint(byte[] b, int[] at, int end) throws ProtocolException {
        long value = 0;
        int start = at[0];
        for (int i = 0; i < Varint.MAX_BYTES; i++) {
            if (start + i >= end) {
                at[0] = -1;
                return 0;
            }
            int x = b[start + i] & 0xFF;
            if (i == Varint.MAX_BYTES - 1 && x > 0x01) {
                break; // 2**64 or more, or an 11th byte
            }
            value |= (long) (x & 0x7F) << (7 * i);
            if (x < 0x80) {
                if (x == 0 && i > 0) {
                    throw new ProtocolException("non-minimal varint encoding (trailing 0x00 byte)");
                }
                at[0] = start + i + 1;
                return value;
            }
        }
        throw new ProtocolException("over-long varint: more than 10 bytes or a value above 2**64-1");
    }

    private static ProtocolException malformed(String what) {
        return new ProtocolException(what + " (PROTOCOL.md §16.2)");
    }

    private static byte[] message(int type, byte[] payload) {
        byte[] len = varint(payload.length);
        byte[] out = new byte[1 + len.length + payload.length];
        out[0] = (byte) type;
        System.arraycopy(len, 0, out, 1, len.length);
        System.arraycopy(payload, 0, out, 1 + len.length, payload.length);
        return out;
    }

    /** resume(token, position): the client's first bytes on a new transport. */
    static byte[] resume(byte[] token, long position) {
        byte[] tl = varint(token.length);
        byte[] pos = varint(position);
        byte[] payload = new byte[tl.length + token.length + pos.length];
        System.arraycopy(tl, 0, payload, 0, tl.length);
        System.arraycopy(token, 0, payload, tl.length, token.length);
        System.arraycopy(pos, 0, payload, tl.length + token.length, pos.length);
        return message(FrameType.RESUME, payload);
    }

    static byte[] resumed(long position) {
        return message(FrameType.RESUMED, varint(position));
    }

    static byte[] refused(String reason) {
        return message(FrameType.RESUME_REFUSED, reason.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * One extension-form message at the start of {@code in} (type, length, payload), or null if
     * it is not complete yet; the buffer's reader index moves past it only when complete.
     */
    static byte[][] take(ByteBuf in) throws ProtocolException {
        int start = in.readerIndex();
        int n = in.readableBytes();
        if (n < 2) {
            return null;
        }
        byte[] head = new byte[Math.min(n, 1 + Varint.MAX_BYTES)];
        in.getBytes(start, head);
        int[] at = {1};
        long len;
        try {
            len = varint(head, at, head.length);
        } catch (ProtocolException e) {
            throw malformed(String.format("message 0x%02x: %s", head[0] & 0xFF, e.getMessage()));
        }
        if (at[0] < 0) {
            return null; // the length is not all here yet
        }
        if (Long.compareUnsigned(len, MAX_PAYLOAD) > 0) {
            throw new ProtocolException(String.format("message 0x%02x announces a %s-byte payload; at most %d in the resume "
                    + "exchange (PROTOCOL.md §16.7)", head[0] & 0xFF, Long.toUnsignedString(len), MAX_PAYLOAD));
        }
        if (n < at[0] + len) {
            return null;
        }
        byte[] payload = new byte[(int) len];
        in.getBytes(start + at[0], payload);
        in.readerIndex(start + at[0] + (int) len);
        return new byte[][] {{head[0]}, payload};
    }

    /**
     * Where the version-0 serverHello at the start of {@code in} ends (an index of {@code in}), or
     * -1 if it is not all here yet: a resumed transport starts with one (§16.3). Anything else is
     * refused in rstreams' words.
     */
    static int helloEnd(ByteBuf in) throws ProtocolException {
        int start = in.readerIndex();
        int n = in.readableBytes();
        if (n < 1) {
            return -1;
        }
        int type = in.getByte(start) & 0xFF;
        if (type != FrameType.SERVER_HELLO) {
            throw new ProtocolException(String.format("expected a hello of type 0x%02x, got type 0x%02x (PROTOCOL.md §16.3)",
                    FrameType.SERVER_HELLO, type));
        }
        if (n < 2) {
            return -1;
        }
        int version = in.getByte(start + 1) & 0xFF;
        if (version != 0) {
            throw new ProtocolException("a hello with version " + version + " on a version-0 session (PROTOCOL.md §16.3)");
        }
        byte[] b = new byte[n];
        in.getBytes(start, b);
        int[] at = {2};
        long count = helloVarint(b, at);
        if (at[0] < 0) {
            return -1;
        }
        if (Long.compareUnsigned(count, MAX_PAYLOAD) > 0) {
            throw new ProtocolException("serverHello lists " + Long.toUnsignedString(count) + " extensions (PROTOCOL.md §16.3)");
        }
        for (long i = 0; i < count; i++) {
            helloVarint(b, at);
            if (at[0] < 0) {
                return -1;
            }
        }
        return start + at[0];
    }

    private static long helloVarint(byte[] b, int[] at) throws ProtocolException {
        try {
            return varint(b, at, b.length);
        } catch (ProtocolException e) {
            throw malformed("serverHello: " + e.getMessage());
        }
    }

    /** The server's answer to a resume: the position it resumed at, or the reason it refused with (then {@code position} is -1). */
    record Answer(long position, String refused) {}

    /**
     * The client's reading of a new transport after its resume (§16.3), as rstreams reads it: the
     * server's hello, then resumed or resumeRefused (a goodbye in their place, such as a server at its
     * connection limit says, is read as a refusal). Anything else is a ProtocolException in rstreams'
     * words (§16.2, §16.3, §16.7): the server broke the protocol, and the session fails (§16.6).
     */
    static final class AnswerReader {
        private boolean helloSeen;

        /**
         * The answer at the reader index of {@code in} (which moves past what was read), or null
         * until it is all here; the bytes after it stay in {@code in}.
         */
        Answer read(ByteBuf in) throws ProtocolException {
            if (!helloSeen) {
                int end = helloEnd(in);
                if (end < 0) {
                    return null;
                }
                in.readerIndex(end);
                helloSeen = true;
            }
            if (in.isReadable() && in.getByte(in.readerIndex()) == FrameType.GOODBYE) {
                String reason = goodbyeReason(in);
                return reason == null ? null : new Answer(-1, reason);
            }
            byte[][] message = take(in);
            if (message == null) {
                return null;
            }
            int type = message[0][0] & 0xFF;
            if (type == FrameType.RESUMED) {
                return new Answer(position(message[1], "resumed"), null);
            }
            if (type == FrameType.RESUME_REFUSED) {
                return new Answer(-1, new String(message[1], StandardCharsets.UTF_8));
            }
            throw new ProtocolException(String.format("expected resumed or resumeRefused, got type 0x%02x (PROTOCOL.md §16.3)", type));
        }
    }

    /**
     * The reason of the goodbye at the start of {@code in}, or null if it is not all here yet;
     * only shown, so at most {@link #MAX_PAYLOAD} bytes of it are awaited, and bytes that are not
     * UTF-8 are replaced (as rstreams reads a goodbye in place of the answer to resume).
     */
    static String goodbyeReason(ByteBuf in) throws ProtocolException {
        int n = in.readableBytes();
        byte[] b = new byte[Math.min(n, 1 + Varint.MAX_BYTES + MAX_PAYLOAD)];
        in.getBytes(in.readerIndex(), b);
        int[] at = {1};
        long size;
        try {
            size = varint(b, at, b.length);
        } catch (ProtocolException e) {
            throw malformed("goodbye: " + e.getMessage());
        }
        if (at[0] < 0) {
            return null;
        }
        int take = Long.compareUnsigned(size, MAX_PAYLOAD) > 0 ? MAX_PAYLOAD : (int) size;
        if (b.length < at[0] + take) {
            return null;
        }
        return new String(b, at[0], take, StandardCharsets.UTF_8);
    }

    /**
     * Splits a resume payload into its token and position (§16.2), refused in rstreams' words; a
     * position above 2**63 - 1 is returned as a negative long (outside every replay buffer).
     */
    static Object[] tokenAndPosition(byte[] payload) throws ProtocolException {
        int[] at = {0};
        long tl = readVarint(payload, at, "resume token length");
        if (tl < 1 || tl > 64) {
            throw malformed("resume token length " + Long.toUnsignedString(tl) + " is not 1 to 64 bytes");
        }
        if (at[0] + tl > payload.length) {
            throw malformed("resume token length " + tl + " runs past the payload");
        }
        byte[] token = new byte[(int) tl];
        System.arraycopy(payload, at[0], token, 0, token.length);
        at[0] += token.length;
        long pos = readVarint(payload, at, "resume position");
        if (at[0] != payload.length) {
            throw malformed("resume: " + (payload.length - at[0]) + " byte(s) after the position");
        }
        return new Object[] {token, pos};
    }
}
