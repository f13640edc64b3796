package io.rstreams.net;

import io.rstreams.wire.Connection;
import io.rstreams.wire.ErrorCode;
import java.io.ByteArrayOutputStream;
import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Flow;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The subscriber this end puts on a local publisher when the peer subscribes to it, and the
 * pump from that publisher to the wire.
 *
 * <p>Demand never turns into memory: it asks the local publisher for at most {@link #WINDOW}
 * elements beyond those written, never more than the peer's outstanding demand, and only while
 * the channel is writable. A slow peer therefore stops production instead of filling a queue,
 * whatever {@code request(n)} it sent (PROTOCOL.md §6.3). Signals from the publisher (any
 * thread) go through a queue to the I/O thread, drained by one loop at a time; elements leave
 * that queue for the connection only while the channel is writable, so a window sized by small
 * elements and answered with large ones waits there instead of passing MAX_UNSENT in one turn.
 */
final class ServingStream implements Flow.Subscriber<byte[]> {
    /** Elements asked of the local publisher and not yet written, at most. */
    static final int WINDOW = 256;
    /** Bytes of elements asked for at once, about: large elements get a smaller window. */
    static final int WINDOW_BYTES = 256 * 1024;

    private static final Object COMPLETE = new Object();

    private record Failure(Throwable error) {}

    private final Endpoint endpoint;
    private final long id;
    private final int elementSize;
    private final String contentType; // stated before onSubscribe (§17.1), or null
    private final ConcurrentLinkedQueue<Object> inbox = new ConcurrentLinkedQueue<>();
    private final AtomicInteger wip = new AtomicInteger();
    private final AtomicReference<Flow.Subscription> upstream = new AtomicReference<>();
    // I/O thread only:
    private boolean started;
    private boolean done;
    private long asked;
    private boolean large;
    /** The size of the last element, -1 before the first (unknown). */
    private int lastSize;

    ServingStream(Endpoint endpoint, long id, int elementSize, String contentType) {
        this.endpoint = endpoint;
        this.id = id;
        this.elementSize = elementSize;
        this.contentType = contentType;
        this.lastSize = elementSize > 0 ? elementSize : -1;
    }

    @Override
    public void onSubscribe(Flow.Subscription subscription) {
        Objects.requireNonNull(subscription, "rule 2.13: onSubscribe(null)");
        if (!upstream.compareAndSet(null, subscription)) {
            subscription.cancel(); // rule 2.5: one subscription at a time
            return;
        }
        schedule();
    }

    @Override
    public void onNext(byte[] element) {
        Objects.requireNonNull(element, "rule 2.13: onNext(null)");
        inbox.add(element);
        schedule();
    }

    @Override
    public void onError(Throwable error) {
        Objects.requireNonNull(error, "rule 2.13: onError(null)");
        inbox.add(new Failure(error));
        schedule();
    }

    @Override
    public void onComplete() {
        inbox.add(COMPLETE);
        schedule();
    }

    private void schedule() {
        if (wip.getAndIncrement() == 0) {
            endpoint.execute(this::drain);
        }
    }

    /** The peer cancelled, broke rule 3.9, or the connection ended: cancel the local publisher. */
    void cancelFromPeer() {
        if (!done) {
            done = true;
            Flow.Subscription s = upstream.get();
            if (s != null) {
                s.cancel();
            }
        }
    }

    /** Demand or writability changed: ask the local publisher for more if there is room. */
    void refill() {
        if (wip.getAndIncrement() == 0) {
            drain();
        }
    }

    private void drain() {
        int missed = 1;
        boolean requested = false;
        do {
            Connection conn = endpoint.connection();
            Flow.Subscription s = upstream.get();
            if (!started && s != null) {
                started = true;
                if (done || !conn.onSubscribe(id, elementSize, contentType)) {
                    done = true;
                    s.cancel();
                }
            }
            ByteArrayOutputStream pack = null;
            int packed = 0;
            for (Object signal = inbox.peek(); signal != null; signal = inbox.peek()) {
                if (!done && signal instanceof byte[] && !roomForElement(conn)) {
                    break; // it waits here, in order, until the channel takes more (refill)
                }
                inbox.poll();
                if (done) {
                    continue; // dropped: the peer is gone (rule 3.12 lets signals arrive after cancel)
                }
                if (signal instanceof byte[] element) {
                    asked--;
                    large = element.length > conn.limits().splitThreshold();
                    lastSize = element.length;
                    if (elementSize > 0 && element.length == elementSize) {
                        if (pack == null) {
                            pack = new ByteArrayOutputStream();
                        }
                        pack.write(element, 0, element.length);
                        if (++packed * (long) elementSize >= conn.limits().splitThreshold()) {
                            send(conn, pack, packed);
                            pack = null;
                            packed = 0;
                        }
                    } else if (elementSize > 0) {
                        fail(conn, s, "an element of " + element.length + " bytes on a stream of " + elementSize + "-byte elements");
                    } else {
                        endpoint.ledger().elementBytes += element.length; // elements are not replies (§6.3)
                        if (!conn.onNext(id, element)) {
                            cancelFromPeer();
                        }
                    }
                    continue;
                }
                if (pack != null) {
                    send(conn, pack, packed);
                    pack = null;
                    packed = 0;
                }
                if (signal instanceof Failure f) {
                    done = true;
                    conn.onError(id, failureText(f.error()), codeOf(f.error()));
                } else if (signal == COMPLETE) {
                    done = true;
                    conn.onComplete(id);
                }
                endpoint.serving().remove(id, this);
            }
            if (pack != null) {
                send(conn, pack, packed);
            }
            endpoint.writePending(); // before asking for more: writability must count what was just produced
            if (!requested) {
                requested = request(conn, s);
            } else if (!done) {
                endpoint.execute(this::refill); // one window per turn: the other streams get theirs (fairness)
            }
            endpoint.scheduleFlush();
            missed = wip.addAndGet(-missed);
        } while (missed != 0);
    }

    /**
     * Whether the next element may go to the connection now: while the channel is writable and
     * no split element of this stream is still going out. What the publisher emitted beyond that
     * waits in the inbox, so the bytes handed to the channel stay near its high-water mark
     * whatever the elements' sizes: a window asked for by small elements may be answered with
     * large ones (sizes may grow from one element to the next), and MAX_UNSENT must only ever
     * catch a peer that does not read, never one turn's burst.
     */
    private boolean roomForElement(Connection conn) {
        if (conn.queuedBytes(id) > 0) {
            return false; // parts go out while the channel takes them; their end refills (§8)
        }
        if (conn.pendingOutput() >= WINDOW_BYTES) {
            endpoint.writePending(); // so that the channel's writability counts it
        }
        return endpoint.channelWritable();
    }

    private void send(Connection conn, ByteArrayOutputStream pack, int count) {
        endpoint.ledger().elementBytes += pack.size();
        boolean open = count == 1 ? conn.onNext(id, pack.toByteArray()) : conn.onNextPacked(id, pack.toByteArray(), count);
        if (!open) {
            cancelFromPeer();
        }
    }

    private void fail(Connection conn, Flow.Subscription s, String why) {
        done = true;
        if (s != null) {
            s.cancel();
        }
        conn.onError(id, why, ErrorCode.INTERNAL.value()); // the serving side failed (§19.2)
        endpoint.serving().remove(id, this);
    }

    /** Asks the local publisher for more if the peer's demand, the window and the channel allow; true if it did. */
    private boolean request(Connection conn, Flow.Subscription s) {
        if (done || !started || s == null || !endpoint.writable() || conn.queuedBytes(id) > 0) {
            return false;
        }
        // large elements: fewer at a time, so what is asked for stays near WINDOW_BYTES; before the
        // first element tells their size, they may be as large as the largest written whole (a
        // publisher that emits inside request(n) puts its whole first window into one write)
        int size = lastSize >= 0 ? lastSize : conn.limits().splitThreshold();
        long window = large ? 1 : Math.max(1, Math.min(WINDOW, WINDOW_BYTES / Math.max(1, size)));
        long credit = conn.credit(id);
        long room = Math.min(credit, window) - asked;
        if (room > 0 && (room >= window / 2 || asked == 0 || room == credit - asked)) {
            asked += room;
            s.request(room);
            return true;
        }
        return false;
    }

    /**
     * The error code (§19.2) of a served publisher's failure: the code of a
     * {@link RemoteStreamException} that has one (a relayed error keeps its code), else 1
     * (application).
     */
    static long codeOf(Throwable error) {
        if (error instanceof RemoteStreamException r && r.code().isPresent()) {
            return r.code().getAsLong();
        }
        return ErrorCode.APPLICATION.value();
    }

    /**
     * The onError text of a served publisher's own failure, in rstreams' form (its
     * {@code f"{type(error).__name__}: {error}"}): the error's simple class name, a colon and
     * its message, {@code IllegalStateException: boom}; the same from every binding.
     */
    static String failureText(Throwable error) {
        String type = error.getClass().getSimpleName();
        String message = error.getMessage();
        return (type.isEmpty() ? error.getClass().getName() : type) + ": " + (message == null ? "" : message);
    }

    static String text(Throwable error) {
        String message = error.getMessage();
        return message == null || message.isEmpty() ? error.getClass().getSimpleName() : message;
    }
}
