package io.rstreams.net;

import io.rstreams.wire.Connection;
import io.rstreams.wire.Event;
import io.rstreams.wire.Messages;
import io.rstreams.wire.Varint;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One connection's extension messages (PROTOCOL.md §20) on its I/O thread, both ways; the
 * credit itself is kept by the connection ({@link Messages}).
 *
 * <p>Theory of operation. Receiving: each message is handed to the handler its name resolves
 * to, on the I/O thread, in the order received; it holds its credit until the handler returned
 * (or the stage it returned completed), or it was dropped: no handler, a malformed name (§5.5),
 * refused by the server's authorize (§20.4), the handler threw (logged on
 * {@code io.rstreams.net.messages}, at WARNING). The credits freed are granted again in one
 * messageCredit, in a task after the current one. Sending: {@link #send} takes one credit and
 * writes the message; without credit it waits in line (first come, first served) for the
 * peer's next messageCredit, or fails at once ({@code wait} false). At most {@link #MAX_WAITING}
 * sends of a connection are unsent at once, counted from the call: one more fails at once with
 * {@link MessageCreditException}, so a caller that never waits for its stages cannot make the
 * connection queue without bound.
 */
final class MessagePump {
    /** Sends of one connection that may wait for credit at once (counted from the call until written or failed). */
    static final int MAX_WAITING = 256;
    private static final System.Logger LOG = System.getLogger("io.rstreams.net.messages");

    private record Pending(String name, byte[] body, CompletableFuture<Void> done) {}

    private final Endpoint endpoint;
    private final MessageHandlers handlers;
    private final AtomicInteger unsent = new AtomicInteger();
    private final ArrayDeque<Pending> waiting = new ArrayDeque<>(); // I/O thread only
    private boolean grantQueued;

    MessagePump(Endpoint endpoint, MessageHandlers handlers) {
        this.endpoint = endpoint;
        this.handlers = handlers;
    }

    private Connection conn() {
        return endpoint.connection();
    }

    // ---- sending --------------------------------------------------------------------------

    /** Sends {@code body} to the peer's handler {@code name}; see {@link RsioConnection#send}. Any thread. */
    CompletableFuture<Void> send(String name, byte[] body, boolean wait) {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(body, "body");
        int nameBytes = name.getBytes(StandardCharsets.UTF_8).length;
        long size = (long) Varint.size(nameBytes) + nameBytes + body.length;
        int limit = conn().limits().maxStringLength();
        if (size > limit) {
            throw new IllegalArgumentException("message of " + size + " bytes (name and body) above max_string_length = " + limit
                    + ": an extension message's payload is limited by it (PROTOCOL.md §20.2)");
        }
        CompletableFuture<Void> done = new CompletableFuture<>();
        if (unsent.incrementAndGet() > MAX_WAITING) {
            unsent.decrementAndGet();
            done.completeExceptionally(new MessageCreditException("no message credit to send to '" + name + "', and " + MAX_WAITING
                    + " sends of this connection already wait for it (PROTOCOL.md §20.3): wait for their stages before sending more"));
            return done;
        }
        done.whenComplete((v, e) -> unsent.decrementAndGet());
        Pending p = new Pending(name, body.clone(), done);
        try {
            endpoint.loop().execute(() -> sendOnLoop(p, wait));
        } catch (RejectedExecutionException e) { // the client was closed, its I/O threads stopped
            done.completeExceptionally(notSent(name, endpoint.closedError()));
        }
        return done;
    }

    private void sendOnLoop(Pending p, boolean wait) {
        Connection conn = conn();
        Messages m = conn.messages();
        if (endpoint.closedError() != null || conn.state() == Connection.State.CLOSING || conn.state() == Connection.State.CLOSED) {
            p.done().completeExceptionally(notSent(p.name(), endpoint.closedError()));
        } else if (conn.helloReceived() && !m.active()) {
            p.done().completeExceptionally(new IllegalStateException(Messages.notActive()));
        } else if (waiting.isEmpty() && m.active() && m.credit() > 0) {
            write(p);
        } else if (!wait) {
            String why = conn.helloReceived() ? "the peer's handlers hold all of it" : "its hello has not arrived";
            p.done().completeExceptionally(new MessageCreditException("no message credit to send to '" + p.name() + "': " + why
                    + " (PROTOCOL.md §20.3); send(...) waits for it"));
        } else {
            waiting.add(p);
        }
    }

    private void write(Pending p) {
        conn().messages().send(p.name(), p.body());
        endpoint.scheduleFlush();
        p.done().complete(null);
    }

    /** The peer granted credit (or its hello came): waiting sends go, in order, while it lasts. */
    void credit() {
        Messages m = conn().messages();
        while (!waiting.isEmpty() && m.active() && m.credit() > 0 && conn().state() == Connection.State.OPEN) {
            write(waiting.poll());
        }
    }

    /** The peer's hello arrived: without the extension, every waiting send fails (§20.1). */
    void hello() {
        if (!conn().messages().active()) {
            fail(new IllegalStateException(Messages.notActive()));
        }
    }

    /** The connection ended: every waiting send fails. */
    void closed(RuntimeException why) {
        while (!waiting.isEmpty()) {
            Pending p = waiting.poll();
            p.done().completeExceptionally(notSent(p.name(), why));
        }
    }

    private void fail(RuntimeException error) {
        while (!waiting.isEmpty()) {
            waiting.poll().done().completeExceptionally(error);
        }
    }

    private static ConnectionClosedException notSent(String name, RuntimeException why) {
        ConnectionClosedException e = new ConnectionClosedException("the RS.io connection is closed: the message to '" + name
                + "' was not sent" + (why == null || why.getMessage() == null ? "" : " (" + why.getMessage() + ")"));
        if (why != null) {
            e.initCause(why);
        }
        return e;
    }

    // ---- receiving ------------------------------------------------------------------------

    /** A message from the peer (§20.2): to its handler, or dropped (§20.4); its credit held until then. */
    void received(Event.Message m, RsioConnection facade) {
        String name = m.name();
        if (m.refusal() != null) {
            dropped(name, m.refusal() + " (PROTOCOL.md §20.4)");
            return;
        }
        Routes.Match match = handlers.resolve(name, facade);
        if (match == null) {
            dropped(name, "no such handler (PROTOCOL.md §20.4)");
            return;
        }
        if (match.fault() != null) { // a malformed name (§5.5): dropped, not half understood
            dropped(name, "its name " + match.fault() + " (PROTOCOL.md §5.5)");
            return;
        }
        Message message = new Message(name, match.request().path(), match.request().params(), m.body(), facade);
        CompletionStage<?> stage;
        try {
            stage = handlers.handler(match).apply(message);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "the message handler for '" + name + "' threw (PROTOCOL.md §20.4)", e);
            over();
            return;
        }
        if (stage == null) {
            over();
            return;
        }
        stage.whenComplete((v, e) -> {
            if (e != null) {
                LOG.log(System.Logger.Level.WARNING, "the message handler for '" + name + "' failed (PROTOCOL.md §20.4)", e);
            }
            endpoint.execute(this::over);
        });
    }

    private void dropped(String name, String why) {
        LOG.log(System.Logger.Level.WARNING, "message to '" + name + "' dropped: " + why);
        over();
    }

    /** One message's handling is over: its credit goes back with the others freed in this turn (§20.3). */
    private void over() {
        conn().messages().handled(1);
        if (!grantQueued) {
            grantQueued = true;
            endpoint.execute(() -> {
                grantQueued = false;
                if (endpoint.closedError() == null) {
                    conn().messages().grantFreed();
                    endpoint.scheduleFlush();
                }
            });
        }
    }
}
