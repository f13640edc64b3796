package io.rstreams.net;

import java.util.ArrayDeque;

/**
 * Which of the bytes not yet sent to the peer are replies (PROTOCOL.md §6.3), so that an
 * endpoint can stop reading a peer that makes it answer and does not read the answers.
 *
 * <p>Replies are what this end writes in answer to the peer's messages (pongs, refusals,
 * errors, acknowledgements, goodbyes); elements of local publishers are bounded already (they
 * are produced only while the channel is writable) and do not count, so two endpoints that
 * stream to each other never both wait for the other to read. Every write is recorded with
 * how many of its bytes were replies: the bytes written minus the element bytes the serving
 * streams handed to the connection since the last write. A channel sends in order, so the
 * unsent bytes are the newest written and the replies among them are read off the marks.
 * Writes less than {@link #MARK_SPACING} apart share one mark (their replies count as unsent
 * until the last of them is sent: an estimate on the safe side), so the ledger stays small.
 * Confined to the channel's event loop, as rstreams' ReplyLedger.
 *
 * <p>What is counted, precisely, and why it errs on the side of pausing early: "written" and
 * "replies" are RS.io bytes, as the connection hands them to the channel; only element payload
 * bytes are taken out, so the heads of onNext, onNextPacked and part frames count as replies,
 * and so do the messages this end sends of its own accord (subscribe, request, cancel). The
 * unsent bytes (see {@link #unsentReplies}) are Netty's {@code
 * ChannelOutboundBuffer.totalPendingWriteBytes()}: bytes as they leave the pipeline, after TLS
 * records or WebSocket frame heads were added, and 96 bytes more for each write not yet taken
 * by the socket (Netty's entry overhead, {@code
 * io.netty.transport.outboundBufferEntrySizeOverhead}). Each of these makes the unsent figure
 * larger than the RS.io bytes not yet sent, so marks are taken for sent later and the unsent
 * replies can only be over-estimated. Netty's figure alone cannot take the ledger's place: it
 * does not tell replies from elements, and pausing on every unsent byte would stop two ends
 * that stream to each other.
 */
final class ReplyLedger {
    /** Least distance, in bytes written, between two marks. */
    static final long MARK_SPACING = 4 * 1024;

    /** Element bytes handed to the connection and not yet written (the serving streams add to it). */
    long elementBytes;
    private long written;
    private long replies;
    private long sentReplies;
    private long lastMark;
    private final ArrayDeque<long[]> marks = new ArrayDeque<>(); // {written, replies} after a write with replies

    /** {@code n} bytes were handed to the channel; {@code more}: the connection still holds parts of split elements. */
    void wrote(long n, boolean more) {
        long elements = Math.min(n, elementBytes);
        elementBytes = more ? elementBytes - elements : 0;
        written += n;
        if (n == elements) {
            return;
        }
        replies += n - elements;
        long[] last = marks.peekLast();
        if (last != null && written - lastMark < MARK_SPACING) {
            last[0] = written; // close behind the last mark: joins it
            last[1] = replies;
        } else {
            marks.addLast(new long[] {written, replies});
            lastMark = written;
        }
    }

    /** Reply bytes among the {@code unsent} newest bytes written, never more than {@code unsent}. */
    long unsentReplies(long unsent) {
        long sent = written - unsent;
        for (long[] first = marks.peekFirst(); first != null && first[0] <= sent; first = marks.peekFirst()) {
            sentReplies = marks.pollFirst()[1];
        }
        return Math.min(replies - sentReplies, unsent);
    }
}
