package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.rstreams.testing.RawSockets;
import io.rstreams.wire.Frame;
import io.rstreams.wire.FrameType;
import io.rstreams.wire.FrameWriter;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.testng.annotations.Test;

/**
 * Extension messages (PROTOCOL.md §20) between the Java client and the Java server, both ways:
 * handlers by name and pattern, the credit a slow handler holds, drops, and the refusals of a send.
 */
public class MessagesNetTest {
    private static final long WAIT = 20;

    private static <T> T join(CompletionStage<T> stage) throws Exception {
        return stage.toCompletableFuture().get(WAIT, TimeUnit.SECONDS);
    }

    private static Throwable failure(CompletionStage<?> stage) {
        CompletionException e = expectThrows(CompletionException.class, () -> stage.toCompletableFuture().orTimeout(WAIT, TimeUnit.SECONDS).join());
        return e.getCause();
    }

    private static Message take(BlockingQueue<Message> q) throws InterruptedException {
        Message m = q.poll(WAIT, TimeUnit.SECONDS);
        assertTrue(m != null, "no message within " + WAIT + " s");
        return m;
    }

    @Test(timeOut = 60_000)
    public void messagesReachHandlersByNameAndPatternBothWays() throws Exception {
        BlockingQueue<Message> atServer = new LinkedBlockingQueue<>();
        BlockingQueue<Message> atClient = new LinkedBlockingQueue<>();
        try (RsioServer server = RsioServer.builder()
                        .handler("events/{kind}", atServer::add)
                        .handler("events/exact", m -> atServer.add(m))
                        .handler("reply", m -> m.connection().send("notify?from=server", "re: " + m.text()))
                        .bind("tcp://127.0.0.1:0");
                RsioClient client = RsioClient.builder().handler("notify", atClient::add).build();
                RsioConnection conn = client.connect(server.url()).get(WAIT, TimeUnit.SECONDS)) {
            join(conn.send("events/click?x=1", "hi"));
            Message m = take(atServer);
            assertEquals(m.name(), "events/click?x=1");
            assertEquals(m.path(), "events/click");
            assertEquals(m.params(), Map.of("kind", "click", "x", "1"));
            assertEquals(m.text(), "hi");
            join(conn.send("events/exact", new byte[] {1, 2}));
            m = take(atServer);
            assertEquals(m.params(), Map.of(), "an exact name wins over the pattern");
            assertEquals(m.body(), new byte[] {1, 2});
            join(conn.send("reply", "ping"));
            m = take(atClient);
            assertEquals(m.name(), "notify?from=server");
            assertEquals(m.param("from", "?"), "server");
            assertEquals(m.text(), "re: ping");
            assertTrue(conn.activeExtensions().contains(FrameType.MESSAGES));
        }
    }

    /** A slow handler holds its credit: the sender waits for it, and never sends beyond it (§20.3). */
    @Test(timeOut = 60_000)
    public void aSenderWithoutCreditWaitsUntilAHandlerFinishes() throws Exception {
        BlockingQueue<CompletableFuture<Void>> running = new LinkedBlockingQueue<>();
        BlockingQueue<Message> got = new LinkedBlockingQueue<>();
        try (RsioServer server = RsioServer.builder()
                        .maxMessagesInFlight(2)
                        .asyncHandler("slow", m -> {
                            got.add(m);
                            CompletableFuture<Void> done = new CompletableFuture<>();
                            running.add(done);
                            return done;
                        })
                        .bind("tcp://127.0.0.1:0");
                RsioClient client = RsioClient.builder().build();
                RsioConnection conn = client.connect(server.url()).get(WAIT, TimeUnit.SECONDS)) {
            join(conn.send("slow", "1"));
            join(conn.send("slow", "2"));
            CompletionStage<Void> third = conn.send("slow", "3");
            Throwable refused = failure(conn.trySend("slow", new byte[0]));
            assertTrue(refused instanceof MessageCreditException, String.valueOf(refused));
            assertTrue(refused.getMessage().contains("(PROTOCOL.md §20.3)"), refused.getMessage());
            assertEquals(take(got).text(), "1");
            assertEquals(take(got).text(), "2");
            assertFalse(third.toCompletableFuture().isDone(), "sent beyond the credit of 2");
            running.poll(WAIT, TimeUnit.SECONDS).complete(null);
            join(third);
            assertEquals(take(got).text(), "3");
            assertTrue(conn.isOpen());
        }
    }

    /** Unknown names and handlers that throw drop the message, give its credit back, and the connection goes on (§20.4). */
    @Test(timeOut = 60_000)
    public void droppedMessagesGiveTheirCreditBack() throws Exception {
        BlockingQueue<Message> got = new LinkedBlockingQueue<>();
        AtomicReference<List<java.util.logging.LogRecord>> logs = new AtomicReference<>();
        try (RsioServer server = RsioServer.builder()
                        .maxMessagesInFlight(1)
                        .handler("boom", m -> {
                            throw new IllegalStateException("boom");
                        })
                        .asyncHandler("fails", m -> CompletableFuture.failedFuture(new IllegalStateException("later")))
                        .handler("ok", got::add)
                        .bind("tcp://127.0.0.1:0");
                RsioClient client = RsioClient.builder().build();
                RsioConnection conn = client.connect(server.url()).get(WAIT, TimeUnit.SECONDS)) {
            logs.set(LoggedRecords.during("message", () -> {
                for (int i = 0; i < 3; i++) {
                    join(conn.send("nobody/" + i, "x"));
                    join(conn.send("boom", "x"));
                    join(conn.send("fails", "x"));
                    join(conn.send("ok?a=1&a=2", "x")); // a key given twice: malformed (§5.5)
                }
                join(conn.send("ok", "last"));
                assertEquals(take(got).text(), "last");
            }));
            assertTrue(got.isEmpty(), "the malformed name reached its handler");
        }
        List<String> texts = logs.get().stream().map(java.util.logging.LogRecord::getMessage).toList();
        assertTrue(texts.contains("message to 'nobody/0' dropped: no such handler (PROTOCOL.md §20.4)"), texts.toString());
        assertTrue(texts.contains("the message handler for 'boom' threw (PROTOCOL.md §20.4)"), texts.toString());
        assertTrue(texts.contains("the message handler for 'fails' failed (PROTOCOL.md §20.4)"), texts.toString());
        assertTrue(texts.contains("message to 'ok?a=1&a=2' dropped: its name gives the parameter 'a' more than once (PROTOCOL.md §5.5)"),
                texts.toString());
    }

    /**
     * A server checking credentials (§20.4): messages sent before the authenticate wait for it,
     * then each is authorized by name like a subscribe; a refused one is dropped, logged, and its
     * credit comes back.
     */
    @Test(timeOut = 60_000)
    public void aServerAuthorizesEachMessageByName() throws Exception {
        BlockingQueue<Message> got = new LinkedBlockingQueue<>();
        List<String> asked = new java.util.concurrent.CopyOnWriteArrayList<>();
        AtomicReference<List<java.util.logging.LogRecord>> logs = new AtomicReference<>();
        try (RsioServer server = RsioServer.builder()
                        .token("t")
                        .authorize((c, name) -> {
                            asked.add(name);
                            return !name.startsWith("secret");
                        })
                        .maxMessagesInFlight(1)
                        .handler("{what}", got::add)
                        .bind("tcp://127.0.0.1:0");
                RsioClient client = RsioClient.builder().token("t").build();
                RsioConnection conn = client.connect(server.url()).get(WAIT, TimeUnit.SECONDS)) {
            logs.set(LoggedRecords.during("dropped", () -> {
                for (int i = 0; i < 3; i++) {
                    join(conn.send("secret", "x"));
                }
                join(conn.send("open?n=1", "y"));
                assertEquals(take(got).params(), Map.of("what", "open", "n", "1"));
            }));
        }
        assertEquals(asked, List.of("secret", "secret", "secret", "open?n=1"));
        assertTrue(got.isEmpty(), "a refused message reached its handler: " + got);
        assertEquals(logs.get().get(0).getMessage(), "message to 'secret' dropped: unauthorized (PROTOCOL.md §20.4)");
    }

    /** At most MAX_WAITING sends wait for credit: the next fails at once instead of queueing. */
    @Test(timeOut = 60_000)
    public void waitingSendsAreBounded() throws Exception {
        try (RsioServer server = RsioServer.builder()
                        .maxMessagesInFlight(1)
                        .asyncHandler("stuck", m -> new CompletableFuture<Void>())
                        .bind("tcp://127.0.0.1:0");
                RsioClient client = RsioClient.builder().build();
                RsioConnection conn = client.connect(server.url()).get(WAIT, TimeUnit.SECONDS)) {
            join(conn.send("stuck", "1"));
            List<CompletionStage<Void>> waiting = new java.util.ArrayList<>();
            for (int i = 0; i < MessagePump.MAX_WAITING; i++) {
                waiting.add(conn.send("stuck", "w"));
            }
            Throwable refused = failure(conn.send("stuck", "one too many"));
            assertTrue(refused instanceof MessageCreditException, String.valueOf(refused));
            conn.close();
            Throwable closed = failure(waiting.get(0));
            assertTrue(closed instanceof ConnectionClosedException, String.valueOf(closed));
            assertTrue(closed.getMessage().startsWith("the RS.io connection is closed: the message to 'stuck' was not sent"),
                    closed.getMessage());
        }
    }

    @Test(timeOut = 60_000)
    public void aMessageAboveMaxStringLengthIsRefusedAtTheCall() throws Exception {
        try (RsioServer server = RsioServer.builder().bind("tcp://127.0.0.1:0");
                RsioClient client = RsioClient.builder().build();
                RsioConnection conn = client.connect(server.url()).get(WAIT, TimeUnit.SECONDS)) {
            IllegalArgumentException e = expectThrows(IllegalArgumentException.class, () -> conn.send("big", new byte[64 << 10]));
            assertTrue(e.getMessage().endsWith("(PROTOCOL.md §20.2)"), e.getMessage());
        }
    }

    /** A server whose hello does not list id 7: a send is refused locally, citing §20.1, and nothing goes out. */
    @Test(timeOut = 60_000)
    public void aSendToAPeerWithoutTheExtensionIsRefused() throws Exception {
        try (ServerSocket listener = RawSockets.listen(); RsioClient client = RsioClient.builder().build()) {
            CompletableFuture<RsioConnection> connecting = client.connect("tcp://127.0.0.1:" + listener.getLocalPort());
            try (Socket peer = RawSockets.accept(listener)) {
                OutputStream out = peer.getOutputStream();
                RsioConnection conn = connecting.get(WAIT, TimeUnit.SECONDS);
                CompletionStage<Void> early = conn.send("events/click", "sent before the hello");
                out.write(FrameWriter.encode(new Frame.Hello(true, 0, List.of(1L)), 0));
                out.flush();
                for (CompletionStage<Void> stage : List.of(early, conn.send("events/click", "after"))) {
                    Throwable refused = failure(stage);
                    assertTrue(refused instanceof IllegalStateException, String.valueOf(refused));
                    assertEquals(refused.getMessage(), "can't send a message: the peer does not offer extension messages (id 7) "
                            + "(PROTOCOL.md §20.1); its hello does not list it");
                }
                CompletableFuture<Void> closing = conn.closeAsync();
                for (Frame f : RawSockets.answeringTheGoodbye(peer)) {
                    assertTrue(!(f instanceof Frame.Extension x) || x.type() != FrameType.MESSAGE, "a message went out: " + f);
                }
                closing.get(WAIT, TimeUnit.SECONDS);
            }
        }
    }
}
