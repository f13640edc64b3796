package io.rstreams.wire;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Encodes frames (PROTOCOL.md §3) into a growing byte buffer. Not thread-safe. Payloads of
 * {@link #ZERO_COPY} bytes or more are not copied: {@link #takeBuffers()} hands them out as
 * views of the caller's arrays, which must not change until written.
 *
 * <p>The element size of onNext's subscription decides its encoding (§7), so
 * {@link #write(Frame, long)} takes it; every other frame is encoded alone.
 */
public final class FrameWriter {
    /** Payloads at least this big are referenced, not copied, by {@link #takeBuffers()}. */
    public static final int ZERO_COPY = 4096;

    private byte[] buf;
    private int size;
    private final java.util.List<java.nio.ByteBuffer> done = new java.util.ArrayList<>();
    private int doneBytes;

    /** An empty writer. */
    public FrameWriter() {
        buf = new byte[256];
    }

    /** The encoding of one frame, for a subscription whose elementSize is {@code elementSize}. */
    public static byte[] encode(Frame frame, long elementSize) {
        FrameWriter w = new FrameWriter();
        w.write(frame, elementSize);
        return w.take();
    }

    /** Bytes written and not yet taken. */
    public int size() {
        return size + doneBytes;
    }

    /** Returns what was written since the last call as one array, and empties the writer. */
    public byte[] take() {
        java.util.List<java.nio.ByteBuffer> parts = takeBuffers();
        int total = 0;
        for (java.nio.ByteBuffer b : parts) {
            total += b.remaining();
        }
        byte[] out = new byte[total];
        int at = 0;
        for (java.nio.ByteBuffer b : parts) {
            int n = b.remaining();
            b.get(out, at, n);
            at += n;
        }
        return out;
    }

    /** Returns what was written since the last call, in order, without copying it again; empties the writer. */
    public java.util.List<java.nio.ByteBuffer> takeBuffers() {
        seal();
        java.util.List<java.nio.ByteBuffer> out = new java.util.ArrayList<>(done);
        done.clear();
        doneBytes = 0;
        return out;
    }

    /** Moves the bytes in {@code buf} to the list of finished buffers, handing the array over. */
    private void seal() {
        if (size > 0) {
            done.add(java.nio.ByteBuffer.wrap(buf, 0, size));
            doneBytes += size;
            buf = new byte[Math.min(Math.max(256, size), 1 << 16)];
            size = 0;
        }
    }

    /**
     * Appends {@code frame}.
     *
     * @param elementSize the subscription's elementSize for onNext (0: length-prefixed)
     * @throws IllegalArgumentException if an onNext does not have exactly {@code elementSize} bytes
     */
    public void write(Frame frame, long elementSize) {
        if (frame instanceof Frame.Hello h) {
            ensure(2 + 10 * (1 + h.extensions().size()));
            buf[size++] = (byte) h.type();
            buf[size++] = (byte) h.version();
            varint(h.extensions().size());
            for (long e : h.extensions()) {
                varint(e);
            }
        } else if (frame instanceof Frame.Goodbye g) {
            type(FrameType.GOODBYE);
            string(g.reason());
        } else if (frame instanceof Frame.Subscribe s) {
            type(FrameType.SUBSCRIBE);
            string(s.publisher());
            varint(s.subscriber());
            varint(s.initialDemand());
        } else if (frame instanceof Frame.Request r) {
            type(FrameType.REQUEST);
            varint(r.subscriber());
            varint(r.demand());
        } else if (frame instanceof Frame.Cancel c) {
            type(FrameType.CANCEL);
            varint(c.subscriber());
        } else if (frame instanceof Frame.OnSubscribe o) {
            type(FrameType.ON_SUBSCRIBE);
            varint(o.subscriber());
            varint(o.elementSize());
        } else if (frame instanceof Frame.OnNext n) {
            onNext(n.subscriber(), n.element(), 0, n.element().length, elementSize);
        } else if (frame instanceof Frame.OnNextPacked p) {
            type(FrameType.ON_NEXT_PACKED);
            varint(p.subscriber());
            varint(p.count());
            raw(p.elements(), 0, p.elements().length);
        } else if (frame instanceof Frame.OnNextPart p) {
            part(p.last(), p.subscriber(), p.elementId(), p.data(), 0, p.data().length);
        } else if (frame instanceof Frame.OnComplete c) {
            type(FrameType.ON_COMPLETE);
            varint(c.subscriber());
        } else if (frame instanceof Frame.OnError e) {
            type(FrameType.ON_ERROR);
            varint(e.subscriber());
            string(e.error());
        } else if (frame instanceof Frame.Extension x) {
            type(x.type());
            bytes(x.payload(), 0, x.payload().length);
        }
    }

    /** Appends onNext without building a frame object: {@code data[off, off + len)}. */
    public void onNext(long subscriber, byte[] data, int off, int len, long elementSize) {
        if (elementSize != 0 && len != elementSize) {
            throw new IllegalArgumentException(
                    "an element of subscriber " + subscriber + " must be " + elementSize + " bytes (its elementSize), got " + len);
        }
        type(FrameType.ON_NEXT);
        varint(subscriber);
        if (elementSize == 0) {
            bytes(data, off, len);
        } else {
            raw(data, off, len);
        }
    }

    /** Appends onNextPart or onNextLastPart with {@code data[off, off + len)}. */
    public void part(boolean last, long subscriber, long elementId, byte[] data, int off, int len) {
        type(last ? FrameType.ON_NEXT_LAST_PART : FrameType.ON_NEXT_PART);
        varint(subscriber);
        varint(elementId);
        bytes(data, off, len);
    }

    private void type(int type) {
        ensure(1);
        buf[size++] = (byte) type;
    }

    private void varint(long value) {
        ensure(Varint.MAX_BYTES);
        size = Varint.write(value, buf, size);
    }

    private void string(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        bytes(b, 0, b.length);
    }

    private void bytes(byte[] b, int off, int len) {
        varint(len);
        raw(b, off, len);
    }

    private void raw(byte[] b, int off, int len) {
        if (len >= ZERO_COPY) {
            seal();
            done.add(java.nio.ByteBuffer.wrap(b, off, len));
            doneBytes += len;
            return;
        }
        ensure(len);
        System.arraycopy(b, off, buf, size, len);
        size += len;
    }

    private void ensure(int more) {
        if (size + more > buf.length) {
            buf = Arrays.copyOf(buf, Math.max(buf.length * 2, size + more));
        }
    }
}
