package io.rstreams.wire;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Incremental frame parser: bytes in, complete frames out (PROTOCOL.md §2, §3).
 *
 * <p>Theory of operation: {@link #feed} appends what the transport read; {@link #next} returns
 * the next complete frame, or {@code null} when the buffered bytes end inside one. A frame is
 * consumed only when complete. Every length prefix is checked against its limit as soon as it
 * is read, before its bytes arrive, so a hostile prefix never makes the parser buffer more than
 * {@code maxElementSize} plus a header. Malformed input throws {@link ProtocolException}, whose
 * message is the goodbye reason; the parser is then broken and returns nothing more.
 *
 * <p>A large element is copied once. When an onNext or onNextPart header announces a payload of
 * {@link #DIRECT_MIN} bytes or more (up to {@link #DIRECT_MAX}) that has not all arrived, the
 * parser allocates the element's array at once and later input goes straight into it; only the
 * bytes after it are buffered. Otherwise (the common case for large elements: they straddle
 * reads) every byte would be copied into the buffer, moved to its front when it fills, and
 * copied again into the element.
 *
 * <p>The framing of onNext and onNextPacked depends on the subscription's elementSize (§7), so
 * the parser records it itself when it parses an onSubscribe (our subscriber ids) and forgets
 * it at onComplete/onError: frames later in the same read then parse correctly.
 */
public final class FrameParser {
    /** Payloads from this size on are received straight into their array (see the class comment). */
    public static final int DIRECT_MIN = 8 * 1024;
    /** ... up to this size: above it a hostile length prefix would make the parser allocate early. */
    public static final int DIRECT_MAX = 1024 * 1024;

    private final Limits limits;
    private final Map<Long, Long> elementSizes = new HashMap<>();
    private final int[] next = new int[1];
    private byte[] buf = new byte[0];
    private int start;
    private int end;
    private boolean broken;
    /** The payload being received straight into its array (null: none), and its frame's header. */
    private byte[] payload;
    private int payloadFilled;
    private int payloadHeader; // bytes of its frame before the payload (consumed, still counted as held)
    private int payloadType;
    private long payloadSubscriber;
    private long payloadElementId;

    /** A parser enforcing {@code limits}. */
    public FrameParser(Limits limits) {
        this.limits = limits;
    }

    /** Appends {@code data[off, off + len)} to the input. */
    public void feed(byte[] data, int off, int len) {
        if (broken || len == 0) {
            return;
        }
        if (payload != null) {
            int n = Math.min(len, payload.length - payloadFilled);
            System.arraycopy(data, off, payload, payloadFilled, n);
            payloadFilled += n;
            off += n;
            len -= n;
            if (len == 0) {
                return;
            }
        }
        makeRoom(len);
        System.arraycopy(data, off, buf, end, len);
        end += len;
    }

    /** Appends the remaining bytes of {@code data} to the input (they are consumed). */
    public void feed(ByteBuffer data) {
        int len = data.remaining();
        if (broken || len == 0) {
            data.position(data.limit());
            return;
        }
        if (payload != null) {
            int n = Math.min(len, payload.length - payloadFilled);
            data.get(payload, payloadFilled, n);
            payloadFilled += n;
            len -= n;
            if (len == 0) {
                return;
            }
        }
        makeRoom(len);
        data.get(buf, end, len);
        end += len;
    }

    private void makeRoom(int len) {
        if (end + len > buf.length) {
            int live = end - start;
            if (live + len <= buf.length && start > 0) {
                System.arraycopy(buf, start, buf, 0, live);
            } else {
                buf = Arrays.copyOfRange(buf, start, start + Math.max(live + len, Math.max(buf.length * 2, 4096)));
            }
            start = 0;
            end = live;
        }
    }

    /** Bytes held that do not yet form a complete frame (after {@link #next} returned null). */
    public int buffered() {
        return end - start + (payload == null ? 0 : payloadHeader + payloadFilled);
    }

    /** Parses everything fed so far; convenience for tests. */
    public List<Frame> parseAll() throws ProtocolException {
        List<Frame> out = new ArrayList<>();
        for (Frame f = next(); f != null; f = next()) {
            out.add(f);
        }
        return out;
    }

    /**
     * The next complete frame, or {@code null} if the input ends inside one.
     *
     * @throws ProtocolException the input breaks PROTOCOL.md; its message says how and where
     */
    public Frame next() throws ProtocolException {
        if (payload != null) {
            return payloadFilled == payload.length ? finishPayload() : null;
        }
        if (broken || start == end) {
            return null;
        }
        try {
            Frame frame = decode();
            start = next[0];
            if (start == end) {
                start = end = 0;
            }
            return frame;
        } catch (Varint.Incomplete incomplete) {
            return null;
        } catch (ProtocolException e) {
            broken = true;
            throw e;
        }
    }

    /** The error to report if the input ends now: a truncated frame (§9.3), or null. */
    public ProtocolException eof() {
        if (!broken && (start != end || payload != null)) {
            return new ProtocolException("input ended inside a frame (" + buffered()
                    + " bytes of an incomplete frame) (PROTOCOL.md §9.3)");
        }
        return null;
    }

    /** The elementSize this parser recorded for our subscriber {@code id} (0 if none). */
    public long elementSize(long id) {
        return elementSizes.getOrDefault(id, 0L);
    }

    /** Forgets the elementSize of {@code id} (the subscription ended by other means). */
    public void forget(long id) {
        elementSizes.remove(id);
    }

    private Frame decode() throws Varint.Incomplete, ProtocolException {
        int t = buf[start] & 0xFF;
        next[0] = start + 1;
        switch (t) {
            case FrameType.ON_NEXT: {
                long sid = varint();
                long size = elementSizes.getOrDefault(sid, 0L);
                int length;
                if (size != 0) {
                    length = (int) size;
                } else {
                    length = length(varint(), limits.maxElementSize(), "onNext element", sid, "max_element_size");
                }
                return new Frame.OnNext(sid, takePayload(length, t, sid, 0));
            }
            case FrameType.REQUEST: {
                long sid = varint();
                return new Frame.Request(sid, varint());
            }
            case FrameType.CANCEL:
                return new Frame.Cancel(varint());
            case FrameType.ON_COMPLETE: {
                long sid = varint();
                elementSizes.remove(sid);
                return new Frame.OnComplete(sid);
            }
            case FrameType.ON_NEXT_PACKED: {
                long sid = varint();
                long count = varint();
                long size = elementSizes.getOrDefault(sid, 0L);
                if (size == 0) {
                    throw new ProtocolException("onNextPacked for subscriber " + Long.toUnsignedString(sid)
                            + ", which has no onSubscribe with an elementSize above 0 (PROTOCOL.md §7)");
                }
                if (count == 0) {
                    throw new ProtocolException("onNextPacked for subscriber " + Long.toUnsignedString(sid)
                            + " with count 0 (PROTOCOL.md §7)");
                }
                if (Long.compareUnsigned(count, limits.maxElementSize() / size) > 0) {
                    throw tooBig("onNextPacked payload", count > Integer.MAX_VALUE ? -1 : count * size, sid);
                }
                return new Frame.OnNextPacked(sid, count, take((int) (count * size)));
            }
            case FrameType.ON_NEXT_PART:
            case FrameType.ON_NEXT_LAST_PART: {
                long sid = varint();
                long elementId = varint();
                int length = length(varint(), limits.maxElementSize(), "onNextPart data", sid, "max_element_size");
                return new Frame.OnNextPart(t == FrameType.ON_NEXT_LAST_PART, sid, elementId, takePayload(length, t, sid, elementId));
            }
            case FrameType.ON_SUBSCRIBE: {
                long sid = varint();
                long size = varint();
                if (Long.compareUnsigned(size, limits.maxElementSize()) > 0) {
                    throw tooBig("onSubscribe elementSize", size, sid);
                }
                if (size != 0) {
                    elementSizes.put(sid, size);
                } else {
                    elementSizes.remove(sid);
                }
                return new Frame.OnSubscribe(sid, size);
            }
            case FrameType.ON_ERROR: {
                long sid = varint();
                String text = string("onError error");
                elementSizes.remove(sid);
                return new Frame.OnError(sid, text);
            }
            case FrameType.SUBSCRIBE: {
                String name = string("subscribe publisher name");
                long sid = varint();
                return new Frame.Subscribe(name, sid, varint());
            }
            case FrameType.GOODBYE:
                return new Frame.Goodbye(string("goodbye reason"));
            case FrameType.CLIENT_HELLO:
            case FrameType.SERVER_HELLO: {
                if (next[0] >= end) {
                    throw Varint.Incomplete.UNKNOWN;
                }
                int version = buf[next[0]] & 0xFF;
                next[0]++;
                if (version != 0) {
                    // judged by its version first (§4.2): the goodbye names the version, whatever the
                    // rest holds (it has that version's layout, not a list this endpoint could limit)
                    return new Frame.Hello(t == FrameType.SERVER_HELLO, version, List.of());
                }
                long count = varint();
                if (Long.compareUnsigned(count, limits.maxExtensions()) > 0) {
                    throw ProtocolException.limit("hello lists " + Long.toUnsignedString(count)
                            + " extensions, more than max_extensions=" + limits.maxExtensions() + " (PROTOCOL.md §11)");
                }
                List<Long> extensions = new ArrayList<>((int) count);
                for (long i = 0; i < count; i++) {
                    extensions.add(varint());
                }
                return new Frame.Hello(t == FrameType.SERVER_HELLO, version, extensions);
            }
            default:
                if (t >= FrameType.FIRST_EXTENSION) {
                    if (FrameType.owner(t) < 0) {
                        throw new ProtocolException(String.format(
                                "message type 0x%02x belongs to no extension this endpoint knows (PROTOCOL.md §4.4)", t));
                    }
                    long length = varint();
                    if (Long.compareUnsigned(length, limits.maxStringLength()) > 0) {
                        throw ProtocolException.limit(String.format(
                                "extension message 0x%02x payload of %s bytes exceeds max_string_length=%d (PROTOCOL.md §11)",
                                t, Long.toUnsignedString(length), limits.maxStringLength()));
                    }
                    return new Frame.Extension(t, take((int) length));
                }
                throw new ProtocolException(String.format("unknown message type 0x%02x (PROTOCOL.md §3)", t));
        }
    }

    private long varint() throws Varint.Incomplete, ProtocolException {
        return Varint.read(buf, next[0], end, next);
    }

    private int length(long length, int limit, String what, long sid, String limitName) throws ProtocolException {
        if (Long.compareUnsigned(length, limit) > 0) {
            throw tooBig(what, length, sid);
        }
        return (int) length;
    }

    private ProtocolException tooBig(String what, long size, long sid) {
        return ProtocolException.limit(what + " of " + (size < 0 ? "more than 2**31" : Long.toUnsignedString(size))
                + " bytes for subscriber " + Long.toUnsignedString(sid) + " exceeds max_element_size="
                + limits.maxElementSize() + " (PROTOCOL.md §11)");
    }

    private byte[] take(int length) throws Varint.Incomplete {
        int p = next[0];
        if (end - p < length) {
            throw Varint.Incomplete.UNKNOWN;
        }
        next[0] = p + length;
        return Arrays.copyOfRange(buf, p, p + length);
    }

    /**
     * The payload of an onNext or onNextPart whose header ends at {@code next[0]}; when it has not
     * all arrived and is large, starts receiving it straight into its array (the buffered bytes
     * are consumed: the parser then holds none) and reports the frame incomplete.
     */
    private byte[] takePayload(int length, int type, long sid, long elementId) throws Varint.Incomplete {
        int p = next[0];
        int have = end - p;
        if (have >= length || length < DIRECT_MIN || length > DIRECT_MAX) {
            return take(length);
        }
        payload = new byte[length];
        payloadHeader = p - start;
        System.arraycopy(buf, p, payload, 0, have);
        payloadFilled = have;
        payloadType = type;
        payloadSubscriber = sid;
        payloadElementId = elementId;
        start = end = 0;
        throw Varint.Incomplete.UNKNOWN;
    }

    private Frame finishPayload() {
        byte[] data = payload;
        payload = null;
        payloadFilled = 0;
        return payloadType == FrameType.ON_NEXT
                ? new Frame.OnNext(payloadSubscriber, data)
                : new Frame.OnNextPart(payloadType == FrameType.ON_NEXT_LAST_PART, payloadSubscriber, payloadElementId, data);
    }

    private String string(String what) throws Varint.Incomplete, ProtocolException {
        long length = varint();
        if (Long.compareUnsigned(length, limits.maxStringLength()) > 0) {
            throw ProtocolException.limit(what + " of " + Long.toUnsignedString(length)
                    + " bytes exceeds max_string_length=" + limits.maxStringLength() + " (PROTOCOL.md §11)");
        }
        byte[] raw = take((int) length);
        try {
            return StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(raw))
                    .toString();
        } catch (CharacterCodingException e) {
            throw new ProtocolException(what + " is not valid UTF-8 (PROTOCOL.md §2.2)");
        }
    }
}
