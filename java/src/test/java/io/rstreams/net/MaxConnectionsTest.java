package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.rstreams.testing.PythonRstreams;
import io.rstreams.testing.RawSockets;
import io.rstreams.testing.TestSubscriber;
import io.rstreams.wire.ErrorCode;
import io.rstreams.wire.Frame;
import io.rstreams.wire.FrameParser;
import io.rstreams.wire.FrameType;
import io.rstreams.wire.FrameWriter;
import io.rstreams.wire.Limits;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.testng.annotations.Test;

/**
 * The server's connection limit (as rstreams' max_connections, PROTOCOL.md §10): a connection
 * beyond it is refused at its clientHello, with code 8 (unavailable) when the hello offers
 * error-codes, and nothing it sent after the hello is served; and the server's close, which says
 * goodbye {@code server closing} with code 0 (normal) to every connection, as rstreams' Server.aclose.
 */
public class MaxConnectionsTest {
    private static final String REFUSAL = "too many connections: this server accepts at most 1 (maxConnections)";

    /** A server of one connection whose publisher "counter" counts its subscribes in {@code made}. */
    private static RsioServer server(AtomicInteger made) throws InterruptedException {
        return RsioServer.builder()
                .maxConnections(1)
                .route("counter", Codec.INT64, r -> {
                    made.incrementAndGet();
                    return Counters.range(0, 3);
                })
                .bind("tcp://127.0.0.1:0");
    }

    private static byte[] frames(Frame... frames) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (Frame f : frames) {
            out.writeBytes(FrameWriter.encode(f, 0));
        }
        return out.toByteArray();
    }

    private static Frame.Hello hello(Long... extensions) {
        return new Frame.Hello(false, 0, List.of(extensions));
    }

    /** The frames a raw peer reads after writing {@code bytes} in one write to {@code url}'s port. */
    private static List<Frame> exchange(int port, byte[] bytes) throws Exception {
        try (Socket socket = RawSockets.connect(port)) {
            socket.getOutputStream().write(bytes);
            return RawSockets.readToTheEnd(socket);
        }
    }

    /** "serverHello goodbyeCode(8) goodbye(reason)" or "serverHello goodbye(reason)", for the assertions. */
    private static String describe(List<Frame> frames) {
        List<String> words = new ArrayList<>();
        for (Frame f : frames) {
            if (f instanceof Frame.Hello) {
                words.add("serverHello");
            } else if (f instanceof Frame.Extension x && x.type() == FrameType.GOODBYE_CODE) {
                words.add("goodbyeCode(" + x.payload()[0] + ")");
            } else if (f instanceof Frame.Goodbye g) {
                words.add("goodbye(" + g.reason() + ")");
            } else {
                words.add(f.getClass().getSimpleName());
            }
        }
        return String.join(" ", words);
    }

    /** A connection that holds the server's one place (its hello exchanged). */
    private static RsioConnection holder(RsioClient client, RsioServer server) throws Exception {
        return client.connect(server.url()).get(10, TimeUnit.SECONDS);
    }

    @Test(timeOut = 30_000)
    public void aConnectionBeyondTheLimitIsRefusedAtItsHelloWithCode8AndNothingAfterItIsServed() throws Exception {
        AtomicInteger made = new AtomicInteger();
        RsioClient client = RsioClient.builder().build();
        try (RsioServer server = server(made); RsioConnection held = holder(client, server)) {
            byte[] together = frames(hello(FrameType.KEEPALIVE, FrameType.ERROR_CODES),
                    new Frame.Subscribe("counter", 1, 5), new Frame.Request(1, 3));
            List<Frame> seen = exchange(server.port(), together);
            assertEquals(describe(seen), "serverHello goodbyeCode(8) goodbye(" + REFUSAL + ")");
            assertEquals(made.get(), 0, "the refused connection's subscribe reached the publisher");
            assertTrue(held.isOpen(), "the admitted connection was disturbed");
            assertEquals(server.admitted(), 1);
        } finally {
            client.close();
        }
    }

    @Test(timeOut = 30_000)
    public void withoutErrorCodesTheRefusalIsAGoodbyeAlone() throws Exception {
        RsioClient client = RsioClient.builder().build();
        try (RsioServer server = server(new AtomicInteger()); RsioConnection held = holder(client, server)) {
            assertEquals(describe(exchange(server.port(), frames(hello(FrameType.KEEPALIVE)))),
                    "serverHello goodbye(" + REFUSAL + ")");
            // bytes after the hello that are not RS.io are not read either: the refusal, not a violation
            byte[] junk = new byte[64];
            java.util.Arrays.fill(junk, (byte) 0x7f);
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            out.writeBytes(frames(hello(FrameType.ERROR_CODES)));
            out.writeBytes(junk);
            assertEquals(describe(exchange(server.port(), out.toByteArray())),
                    "serverHello goodbyeCode(8) goodbye(" + REFUSAL + ")");
        } finally {
            client.close();
        }
    }

    @Test(timeOut = 30_000)
    public void aJavaClientBeyondTheLimitFailsWithUnavailableAndAFreedPlaceIsTakenAgain() throws Exception {
        AtomicInteger made = new AtomicInteger();
        List<RsioConnection> accepted = new java.util.concurrent.CopyOnWriteArrayList<>();
        RsioClient client = RsioClient.builder().build();
        try (RsioServer server = RsioServer.builder().maxConnections(1).onConnection(accepted::add)
                .route("counter", Codec.INT64, r -> {
                    made.incrementAndGet();
                    return Counters.range(0, 3);
                }).bind("tcp://127.0.0.1:0")) {
            RsioConnection first = holder(client, server);
            RsioConnection second = holder(client, server);
            TestSubscriber<byte[]> sub = new TestSubscriber<>();
            second.publisher("counter").subscribe(sub);
            sub.request(3);
            Throwable refused = sub.awaitTerminal();
            assertTrue(refused instanceof ConnectionClosedException, String.valueOf(refused));
            assertEquals(((ConnectionClosedException) refused).errorCode(), ErrorCode.UNAVAILABLE, refused.getMessage());
            assertTrue(refused.getMessage().contains(REFUSAL), refused.getMessage());
            assertEquals(accepted.size(), 1, "the refused connection was announced to onConnection");
            first.close();
            accepted.get(0).onClose().get(10, TimeUnit.SECONDS); // the server's end of it is over: its place is free
            try (RsioConnection third = holder(client, server)) {
                TestSubscriber<Long> counted = new TestSubscriber<>();
                third.publisher("counter", Codec.INT64).subscribe(counted);
                counted.request(5);
                assertEquals(counted.take(3), List.of(0L, 1L, 2L));
            }
            assertEquals(made.get(), 1);
        } finally {
            client.close();
        }
    }

    @Test(timeOut = 30_000)
    public void withResumeASessionCountsAndOneBeyondItGetsNoResumeToken() throws Exception {
        RsioClient client = RsioClient.builder().resume(true).build();
        CompletableFuture<RsioConnection> admitted = new CompletableFuture<>();
        try (RsioServer server = RsioServer.builder().resume(true).maxConnections(1).onConnection(admitted::complete)
                .bind("tcp://127.0.0.1:0"); RsioConnection held = holder(client, server)) {
            admitted.get(10, TimeUnit.SECONDS); // counted once its first byte shows a new session
            List<Frame> seen = exchange(server.port(), frames(hello(FrameType.RESUME_EXTENSION, FrameType.ERROR_CODES)));
            assertEquals(describe(seen), "serverHello goodbyeCode(8) goodbye(" + REFUSAL + ")");
            assertTrue(held.isOpen());
        } finally {
            client.close();
        }
    }

    @Test
    public void aLimitBelowOneIsRefusedNamingTheOption() {
        IllegalArgumentException e = expectThrows(IllegalArgumentException.class, () -> RsioServer.builder().maxConnections(0));
        assertEquals(e.getMessage(), "maxConnections must be >= 1, got 0");
        assertEquals(RsioServer.DEFAULT_MAX_CONNECTIONS, 10_000);
    }

    @Test(timeOut = 30_000)
    public void closeSaysGoodbyeWithCode0AndAStreamEndsWithIt() throws Exception {
        java.util.concurrent.CountDownLatch subscribed = new java.util.concurrent.CountDownLatch(2);
        RsioServer server = RsioServer.builder()
                .route("endless", r -> {
                    subscribed.countDown(); // both hellos are in: the goodbyes carry their code
                    return Counters.silent();
                })
                .bind("tcp://127.0.0.1:0");
        RsioClient client = RsioClient.builder().build();
        try (Socket raw = new Socket("127.0.0.1", server.port()); RsioConnection conn = holder(client, server)) {
            raw.setSoTimeout(20_000);
            raw.getOutputStream().write(frames(hello(FrameType.ERROR_CODES), new Frame.Subscribe("endless", 1, 1)));
            TestSubscriber<byte[]> sub = new TestSubscriber<>();
            conn.publisher("endless").subscribe(sub);
            sub.request(1);
            assertTrue(subscribed.await(10, TimeUnit.SECONDS));
            CompletableFuture<Void> closing = CompletableFuture.runAsync(server::close);
            FrameParser parser = new FrameParser(Limits.DEFAULT);
            List<Frame> seen = new ArrayList<>();
            byte[] buffer = new byte[4096];
            InputStream in = raw.getInputStream();
            while (seen.isEmpty() || !(seen.get(seen.size() - 1) instanceof Frame.Goodbye)) {
                int n = in.read(buffer);
                assertTrue(n >= 0, "the server closed without a goodbye: " + describe(seen));
                parser.feed(buffer, 0, n);
                seen.addAll(parser.parseAll());
            }
            assertEquals(describe(seen), "serverHello OnSubscribe goodbyeCode(0) goodbye(server closing)");
            raw.getOutputStream().write(frames(new Frame.Goodbye(""))); // the answer (§9.1)
            Throwable ended = sub.awaitTerminal();
            assertTrue(ended instanceof ConnectionClosedException, String.valueOf(ended));
            assertEquals(((ConnectionClosedException) ended).errorCode(), ErrorCode.NORMAL, ended.getMessage());
            assertTrue(ended.getMessage().endsWith("server closing"), ended.getMessage());
            closing.get(20, TimeUnit.SECONDS);
            assertEquals(in.read(), -1, "the transport stayed open after close()");
        } finally {
            client.close();
            server.close();
        }
    }

    @Test(timeOut = 30_000)
    public void closeBeforeThePeersHelloSaysGoodbyeWithoutACodeAndClosesAtOnce() throws Exception {
        RsioServer server = RsioServer.builder().handshakeTimeout(null).bind("tcp://127.0.0.1:0");
        try (Socket raw = new Socket("127.0.0.1", server.port())) {
            raw.setSoTimeout(20_000);
            InputStream in = raw.getInputStream();
            FrameParser parser = new FrameParser(Limits.DEFAULT);
            byte[] buffer = new byte[4096];
            List<Frame> seen = new ArrayList<>();
            while (seen.isEmpty()) { // the serverHello: the connection is up
                int n = in.read(buffer);
                assertTrue(n >= 0);
                parser.feed(buffer, 0, n);
                seen.addAll(parser.parseAll());
            }
            server.close();
            seen.addAll(RawSockets.readToTheEnd(raw));
            assertEquals(describe(seen), "serverHello goodbye(server closing)");
        } finally {
            server.close();
        }
    }

    @Test(timeOut = 60_000)
    public void aPythonClientBeyondTheLimitReadsCode8() throws Exception {
        AtomicInteger made = new AtomicInteger();
        RsioClient client = RsioClient.builder().build();
        try (RsioServer server = server(made); RsioConnection held = holder(client, server)) {
            PythonRstreams.Result run = PythonRstreams.request(50, server.url(), "counter");
            assertEquals(run.status(), 0, run.output());
            String line = run.output().trim();
            assertTrue(line.contains(" 8 ") && line.contains(REFUSAL), run.output());
            assertFalse(line.startsWith("served"), run.output());
            assertEquals(made.get(), 0);
        } finally {
            client.close();
        }
    }
}
