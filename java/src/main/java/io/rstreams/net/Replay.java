package io.rstreams.net;

import io.rstreams.wire.ProtocolException;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * The byte bookkeeping of extension resume (PROTOCOL.md §16.3, §16.4) for one session: our
 * stream's position and the bytes the peer has not acknowledged (the replay buffer), and how
 * much of the peer's stream we have received. Positions count every byte a protocol core wrote,
 * from its hello's first byte. Not thread-safe: the session's event loop owns it.
 */
final class Replay {
    /** Unacknowledged bytes at which production stops (§16.4: 4 MiB by default). */
    final long bound;
    private final ArrayDeque<ByteBuffer> kept = new ArrayDeque<>();
    private long acked;
    private long sent;
    private long received;
    private long receivedAtAck;
    private long ackOnlyBytes;
    byte[] token;

    Replay(long bound) {
        this.bound = bound;
    }

    /** Records bytes handed to the transport as the next part of our stream. */
    void sent(List<ByteBuffer> buffers) {
        for (ByteBuffer b : buffers) {
            kept.add(b.duplicate());
            sent += b.remaining();
        }
    }

    /** Where our stream's acknowledged part ends: the first byte still kept for a replay. */
    long ackedPosition() {
        return acked;
    }

    long sentPosition() {
        return sent;
    }

    long unacked() {
        return sent - acked;
    }

    /** The peer has received our stream up to {@code position} (§16.4). */
    void ack(long position) throws ProtocolException {
        if (Long.compareUnsigned(position, sent) > 0) {
            throw new ProtocolException("resumeAck(" + Long.toUnsignedString(position) + ") is beyond the "
                    + sent + " bytes sent (PROTOCOL.md §16.4)");
        }
        long drop = position - acked;
        if (drop <= 0) {
            return; // acknowledgements only move forward
        }
        acked = position;
        while (drop > 0) {
            ByteBuffer head = kept.peek();
            if (head.remaining() <= drop) {
                drop -= head.remaining();
                kept.poll();
            } else {
                head.position(head.position() + (int) drop);
                drop = 0;
            }
        }
    }

    /** Our stream from {@code position} on, or null if those bytes are no longer (or not yet) here. */
    List<ByteBuffer> from(long position) {
        if (position < acked || position > sent) {
            return null;
        }
        List<ByteBuffer> out = new ArrayList<>();
        long skip = position - acked;
        for (ByteBuffer b : kept) {
            ByteBuffer d = b.duplicate();
            if (skip >= d.remaining()) {
                skip -= d.remaining();
                continue;
            }
            d.position(d.position() + (int) skip);
            skip = 0;
            out.add(d);
        }
        return out;
    }

    /** Bytes of the peer's stream fed to our core. */
    void received(long bytes) {
        received += bytes;
    }

    long receivedPosition() {
        return received;
    }

    /** A resumeAck of {@code size} wire bytes arrived: such bytes alone do not call for an acknowledgement. */
    void ackReceived(long size) {
        ackOnlyBytes += size;
    }

    /** Bytes received since our last acknowledgement that were not the peer's acknowledgements. */
    long unacknowledgedReceived() {
        return received - receivedAtAck - ackOnlyBytes;
    }

    /** We are sending resumeAck(receivedPosition()). */
    void acknowledged() {
        receivedAtAck = received;
        ackOnlyBytes = 0;
    }
}
