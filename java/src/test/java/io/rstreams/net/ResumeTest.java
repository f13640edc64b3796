package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertTrue;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.rstreams.testing.CuttingProxy;
import io.rstreams.testing.PythonRstreams;
import io.rstreams.testing.RawSockets;
import io.rstreams.testing.RepoPaths;
import io.rstreams.testing.TestSubscriber;
import io.rstreams.wire.Connection;
import io.rstreams.wire.Frame;
import io.rstreams.wire.FrameParser;
import io.rstreams.wire.FrameType;
import io.rstreams.wire.FrameWriter;
import io.rstreams.wire.Limits;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.LongStream;
import org.testng.annotations.Test;

/** Extension resume (PROTOCOL.md §16): the link is cut under a stream, the session carries on. */
public class ResumeTest {
    private static final int TOTAL = 100_000;
    private static final int FLOWING = 15_000;
    /** The builders' stall timeout (45 s, as rstreams' stall_timeout), in milliseconds. */
    private static final long STALL_DEFAULT = new BuilderOptions().stallTimeout().toMillis();

    /** A client's resume options with the builders' defaults but the stall timeout {@code stall} (null: off). */
    private static Endpoint.ResumeOptions stalling(Duration stall, Endpoint.Reconnector reconnector) {
        BuilderOptions options = new BuilderOptions();
        options.stallTimeout(stall);
        return options.resumeOptions(null, null, reconnector);
    }

    private static void cutAndCarryOn(String host, int port, int cuts) throws Exception {
        cutAndCarryOn("tcp", host, port, "", cuts);
    }

    /** As above, over {@code scheme} ({@code tcp} or {@code ws}, whose URL then ends in {@code path}). */
    static void cutAndCarryOn(String scheme, String host, int port, String path, int cuts) throws Exception {
        try (CuttingProxy proxy = new CuttingProxy(host, port);
             RsioClient client = RsioClient.builder().resume(true).build();
             RsioConnection conn = client.connect(scheme + "://127.0.0.1:" + proxy.port() + path).get(10, TimeUnit.SECONDS)) {
            TestSubscriber<Long> sub = new TestSubscriber<>();
            conn.publisher("counter?from=0&to=" + TOTAL, Codec.INT64).subscribe(sub);
            List<Long> got = new java.util.ArrayList<>();
            sub.request(100);
            got.addAll(sub.take(100));
            assertTrue(conn.activeExtensions().contains(3L), "resume is active: " + conn.activeExtensions());
            for (int k = 0; k < cuts; k++) {
                proxy.cut();
                sub.request(500); // made while the link is down or being replaced
                got.addAll(sub.take(500));
            }
            sub.request(Long.MAX_VALUE); // and now cuts while elements flow: bytes in flight must be replayed
            for (int k = 0; k < cuts; k++) {
                got.addAll(sub.take(FLOWING));
                proxy.cut();
            }
            got.addAll(sub.take(TOTAL - 100 - 500 * cuts - FLOWING * cuts));
            assertNull(sub.awaitTerminal());
            assertEquals(got, LongStream.range(0, TOTAL).boxed().collect(Collectors.toList()), "nothing lost, nothing twice");
            assertTrue(proxy.accepted.get() >= 1 + cuts, "a new transport per cut: " + proxy.accepted.get());
            assertTrue(conn.isOpen());
        }
    }

    @Test(timeOut = 60_000)
    public void javaClientResumesOnTheJavaServer() throws Exception {
        try (RsioServer server = RsioServer.builder()
                .resume(true)
                .route("counter", Codec.INT64, r -> Counters.range(r.longParam("from", 0), r.longParam("to", Long.MAX_VALUE)))
                .bind("tcp://127.0.0.1:0")) {
            cutAndCarryOn("127.0.0.1", server.port(), 3);
        }
    }

    @Test(timeOut = 60_000)
    public void javaClientResumesOnTheJavaServerOverWebSocket() throws Exception {
        try (RsioServer server = RsioServer.builder()
                .resume(true)
                .route("counter", Codec.INT64, r -> Counters.range(r.longParam("from", 0), r.longParam("to", Long.MAX_VALUE)))
                // the server's own origin only: the client, behind a proxy on another port, sends no Origin
                .bind("ws://127.0.0.1:0/rsio")) {
            cutAndCarryOn("ws", "127.0.0.1", server.port(), "/rsio", 3);
        }
    }

    @Test(timeOut = 60_000)
    public void aHookThatSubscribesToTheClientLeavesResumptionWorking() throws Exception {
        // The hook's subscribe used to go out on every new transport, between the hello and
        // resumed, which a client must refuse (§16.3); the hook now sees each session once.
        AtomicInteger announced = new AtomicInteger();
        try (RsioServer server = RsioServer.builder()
                .resume(true)
                .route("counter", Codec.INT64, r -> Counters.range(r.longParam("from", 0), r.longParam("to", Long.MAX_VALUE)))
                .onConnection(conn -> {
                    announced.incrementAndGet();
                    conn.publisher("up").subscribe(new TestSubscriber<>());
                })
                .bind("tcp://127.0.0.1:0")) {
            cutAndCarryOn("127.0.0.1", server.port(), 3);
            assertEquals(announced.get(), 1, "the hook sees the session, not the transports that resume it");
        }
    }

    /**
     * Writes a clientHello offering keepalive and resume, then {@code rest}, to a resuming server
     * whose hook subscribes to the client's {@code up} with {@code hooked}; never ends its own
     * side, so the server must end the connection by itself. Returns all the server wrote.
     */
    private static String rawSession(byte[] rest, TestSubscriber<byte[]> hooked) throws Exception {
        try (RsioServer server = RsioServer.builder()
                .resume(true)
                .route("counter", Codec.INT64, r -> Counters.range(0, 10))
                .onConnection(conn -> conn.publisher("up").subscribe(hooked))
                .bind("tcp://127.0.0.1:0");
             Socket socket = new Socket("127.0.0.1", server.port())) {
            socket.setSoTimeout(10_000);
            byte[] input = new byte[5 + rest.length];
            System.arraycopy(new byte[] {0x01, 0x00, 0x02, 0x01, 0x03}, 0, input, 0, 5);
            System.arraycopy(rest, 0, input, 5, rest.length);
            OutputStream out = socket.getOutputStream();
            out.write(input);
            out.flush();
            return new String(socket.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    @Test(timeOut = 30_000)
    public void aResumeInsideASessionEndsItAtOnce() throws Exception {
        // A resume (0x89) after the hello is a §16.2 error: the goodbye went out, but the
        // connection ended only at the peer's next read, and the hook's subscription, made
        // meanwhile, threw on the I/O thread (IllegalStateException) instead of ending.
        TestSubscriber<byte[]> hooked = new TestSubscriber<>();
        byte[] resume = new byte[20]; // resume(token of 16 zero bytes, position 0)
        resume[0] = (byte) 0x89;
        resume[1] = 18;
        resume[2] = 16;
        String answer = rawSession(resume, hooked);
        assertTrue(answer.contains("message type 0x89 is not allowed inside a session (PROTOCOL.md §16.2)"), answer);
        assertTrue(hooked.terminated.get(10, TimeUnit.SECONDS) instanceof ConnectionClosedException);
    }

    @Test(timeOut = 30_000)
    public void bytesAfterResumeBeforeResumedAreRefusedAndTheSessionFails() throws Exception {
        // §16.3: a client sends nothing after its resume until it has read resumed; bytes that
        // came with the resume were taken for the session's stream, and the session went on.
        TestSubscriber<byte[]> hooked = new TestSubscriber<>();
        try (RsioServer server = RsioServer.builder()
                .resume(true)
                .onConnection(conn -> conn.publisher("up").subscribe(hooked))
                .bind("tcp://127.0.0.1:0");
             Socket first = RawSockets.connect(server.port());
             Socket second = RawSockets.connect(server.port())) {
            first.getOutputStream().write(new byte[] {0x01, 0x00, 0x02, 0x01, 0x03}); // clientHello [keepalive, resume]
            FrameParser parser = new FrameParser(Limits.DEFAULT);
            byte[] buffer = new byte[4096];
            long received = 0;
            byte[] token = null;
            while (token == null) {
                int n = first.getInputStream().read(buffer);
                assertTrue(n >= 0, "the server closed before its resumeToken");
                received += n;
                parser.feed(buffer, 0, n);
                for (Frame f : parser.parseAll()) {
                    if (f instanceof Frame.Extension x && x.type() == 0x88) {
                        token = x.payload();
                    }
                }
            }
            byte[] resume = ResumeFrames.resume(token, received);
            byte[] input = java.util.Arrays.copyOf(resume, resume.length + 1);
            input[resume.length] = 0x05; // a request's first byte, before resumed was read
            second.getOutputStream().write(input); // one write: the server reads the resume and the byte together
            List<Frame> answer = RawSockets.readToTheEnd(second);
            assertEquals(answer.size(), 2, answer.toString()); // the hello (§4.1), then the refusal
            Frame.Extension refused = (Frame.Extension) answer.get(1);
            assertEquals(refused.type(), 0x8B);
            assertEquals(new String(refused.payload(), StandardCharsets.UTF_8), "bytes after resume, before resumed (PROTOCOL.md §16.3)");
            assertTrue(hooked.terminated.get(10, TimeUnit.SECONDS) instanceof ConnectionClosedException, "the session failed");
            RawSockets.readToTheEnd(first); // and its old transport is closed
        }
    }

    @Test(timeOut = 30_000)
    public void anInputEndingInsideResumeIsRefusedAsATruncatedMessage() throws Exception {
        // §9.3: the transport ends inside the resume message (4 of its 7 bytes): refused in
        // rstreams' words, and the transport closed at once (it was closed without an answer)
        try (RsioServer server = RsioServer.builder().resume(true).bind("tcp://127.0.0.1:0");
             Socket raw = RawSockets.connect(server.port())) {
            raw.getOutputStream().write(new byte[] {(byte) 0x89, 0x05, 0x01, 0x61});
            raw.shutdownOutput();
            List<Frame> answer = RawSockets.readToTheEnd(raw);
            assertEquals(answer.size(), 2, answer.toString()); // the hello (§4.1), then the refusal
            Frame.Extension refused = (Frame.Extension) answer.get(1);
            assertEquals(refused.type(), 0x8B);
            assertEquals(new String(refused.payload(), StandardCharsets.UTF_8),
                    "input ended inside resume (4 bytes of an incomplete message) (PROTOCOL.md §9.3)");
        }
    }

    @Test(timeOut = 30_000)
    public void anErrorInTheHellosReadGetsItsGoodbye() throws Exception {
        // The hello and a violation in one read: the connection closed while parsing, then the
        // hello's event tried to send the resumeToken (IllegalStateException on the I/O thread),
        // and the transport was closed without the goodbye.
        String answer = rawSession(new byte[] {0x00}, new TestSubscriber<>());
        assertTrue(answer.contains("unknown message type 0x00 (PROTOCOL.md §3)"), answer);
    }

    @Test(timeOut = 60_000)
    public void aServerClosingSaysGoodbyeOnATransportWhoseFirstByteHasNotCome() throws Exception {
        // With resume, a transport is a new session or a resume only once its first byte has come
        // (§16.3); until then close() closed it without a word. It is said goodbye like any peer
        // that has not said hello: no code (§19.1), no wait for an answer (§9.1).
        RsioServer server = RsioServer.builder().resume(true).bind("tcp://127.0.0.1:0");
        try (Socket raw = RawSockets.connect(server.port())) {
            FrameParser parser = new FrameParser(Limits.DEFAULT);
            List<Frame> frames = new ArrayList<>();
            byte[] buffer = new byte[256];
            while (frames.isEmpty()) { // the server's hello comes at once (§4.1)
                int n = raw.getInputStream().read(buffer);
                assertTrue(n >= 0, "the server closed before its hello");
                parser.feed(buffer, 0, n);
                frames.addAll(parser.parseAll());
            }
            assertTrue(frames.get(0) instanceof Frame.Hello, frames.toString());
            CompletableFuture<Void> closing = CompletableFuture.runAsync(server::close);
            int n = 0;
            while (n >= 0 && (frames.isEmpty() || !(frames.get(frames.size() - 1) instanceof Frame.Goodbye))) {
                n = raw.getInputStream().read(buffer);
                if (n > 0) {
                    parser.feed(buffer, 0, n);
                    frames.addAll(parser.parseAll());
                }
            }
            assertEquals(frames.size(), 2, frames.toString()); // hello, goodbye: no goodbyeCode before it
            assertEquals(RawSockets.lastGoodbye(frames), "server closing");
            raw.shutdownOutput(); // the linger ends at our end of input, not at its bound (2 s, CloseTimeoutTest)
            closing.get(20, TimeUnit.SECONDS);
            assertEquals(raw.getInputStream().read(), -1, "the transport stayed open after close()");
        } finally {
            server.close();
        }
    }

    @Test(timeOut = 60_000)
    public void javaClientResumesOnThePythonServer() throws Exception {
        try (PythonRstreams python = PythonRstreams.serve("--codec", "int64", "--resume")) {
            int port = Integer.parseInt(python.url().substring(python.url().lastIndexOf(':') + 1));
            cutAndCarryOn("127.0.0.1", port, 3);
        }
    }

    @Test(timeOut = 60_000)
    public void javaClientResumesOnThePythonServerOverWebSocket() throws Exception {
        try (PythonRstreams python = PythonRstreams.serveAt("ws://127.0.0.1:0/rsio", "--codec", "int64", "--resume")) {
            String url = python.url();
            int port = Integer.parseInt(url.substring(url.lastIndexOf(':') + 1, url.indexOf('/', url.lastIndexOf(':'))));
            cutAndCarryOn("ws", "127.0.0.1", port, "/rsio", 1);
        }
    }

    @Test(timeOut = 60_000)
    public void pythonClientResumesOnTheJavaServerOverWebSocket() throws Exception {
        Path script = RepoPaths.root().resolve("java/src/test/resources/python/resume_client.py");
        try (RsioServer server = RsioServer.builder()
                .resume(true)
                .route("counter", Codec.INT64, r -> Counters.range(r.longParam("from", 0), r.longParam("to", Long.MAX_VALUE)))
                .bind("ws://127.0.0.1:0/rsio");
             CuttingProxy proxy = new CuttingProxy("127.0.0.1", server.port())) {
            PythonRstreams.python();
            Process client = PythonRstreams.start(script.toString(), "ws://127.0.0.1:" + proxy.port() + "/rsio", "20000");
            try (BufferedReader out = new BufferedReader(new InputStreamReader(client.getInputStream(), StandardCharsets.UTF_8));
                 OutputStream in = client.getOutputStream()) {
                String line = out.readLine();
                assertEquals(line, "cut", "the client's first line");
                proxy.cut(); // with up to 64 elements requested and some in flight
                in.write('\n');
                in.flush();
                assertEquals(out.readLine(), "resumed 20000");
                assertTrue(client.waitFor(20, TimeUnit.SECONDS), "the client did not end");
                assertEquals(client.exitValue(), 0);
                assertTrue(proxy.accepted.get() >= 2, "a new transport after the cut: " + proxy.accepted.get());
            } finally {
                client.destroyForcibly();
            }
        }
    }

    @Test(timeOut = 10_000)
    public void aClientThatCannotReconnectFailsItsStreamsAfterItsAttempts() throws Exception {
        // Its attempts, each refused at once, come after the backoff of §16.7 (50 ms doubling, at
        // most 2 s: 7.15 s in all), so the clock is Netty's virtual one: a client endpoint on an
        // EmbeddedChannel, its transport broken under a stream, each attempt failing at once.
        List<Long> attempts = new ArrayList<>();
        long[] now = {0};
        Endpoint.Reconnector refused = (session, attempt) -> {
            attempts.add(now[0]);
            session.attemptFailed("Connection refused"); // as a connect that is refused
        };
        Endpoint endpoint = new Endpoint(Connection.Side.CLIENT, new Endpoint.Options(Limits.DEFAULT, new Routes(), null, null, null,
                null, null, null, new BuilderOptions().resumeOptions(null, null, refused), null, true));
        EmbeddedChannel channel = new EmbeddedChannel(endpoint);
        channel.freezeTime();
        byte[] token = new byte[16];
        for (Frame f : List.of(new Frame.Hello(true, 0, List.of(3L)), new Frame.Extension(FrameType.RESUME_TOKEN, token))) {
            channel.writeInbound(Unpooled.wrappedBuffer(FrameWriter.encode(f, 0)));
        }
        channel.runPendingTasks();
        assertTrue(endpoint.facade().activeExtensions().contains(3L), endpoint.facade().activeExtensions().toString());
        TestSubscriber<Long> sub = new TestSubscriber<>();
        endpoint.facade().publisher("counter", Codec.INT64).subscribe(sub);
        channel.runPendingTasks();
        sub.request(1);
        channel.runPendingTasks();
        channel.pipeline().fireChannelInactive(); // the link breaks
        long[] backoff = {50, 100, 200, 400, 800, 1600, 2000, 2000};
        List<Long> expected = new ArrayList<>();
        for (long delay : backoff) {
            now[0] += delay - 1;
            channel.advanceTimeBy(delay - 1, TimeUnit.MILLISECONDS);
            channel.runScheduledPendingTasks();
            assertEquals(attempts, expected, "an attempt before its backoff of " + delay + " ms");
            now[0] += 1;
            channel.advanceTimeBy(1, TimeUnit.MILLISECONDS);
            channel.runScheduledPendingTasks();
            expected.add(now[0]);
            assertEquals(attempts, expected, "no attempt after a backoff of " + delay + " ms");
        }
        channel.runPendingTasks();
        Throwable error = sub.terminated.getNow(null);
        assertTrue(error instanceof ConnectionClosedException, String.valueOf(error));
        assertEquals(error.getMessage(), "could not resume the session in 8 attempt(s): Connection refused (PROTOCOL.md §16.3)");
        assertTrue(endpoint.closedFuture().isDone());
        channel.finishAndReleaseAll();
    }

    @Test(timeOut = 30_000)
    public void aRefusedReconnectIsFollowedByTheNextAttempt() throws Exception {
        // The case above end to end, for one attempt: the client's real connect to a port that
        // refuses at once (the server played by hand has stopped listening) counts as a failed
        // attempt, and the next one, after its backoff, reaches the server listening again, whose
        // refusal fails the stream.
        byte[] token = new byte[16];
        byte[] opening = ResumePositionTest.concat(FrameWriter.encode(new Frame.Hello(true, 0, List.of(FrameType.RESUME_EXTENSION)), 0),
                FrameWriter.encode(new Frame.Extension(FrameType.RESUME_TOKEN, token), 0));
        ServerSocket listener = RawSockets.listen();
        int port = listener.getLocalPort();
        try (RsioClient client = RsioClient.builder().resume(true).build()) {
            RsioConnection conn = client.connect("tcp://127.0.0.1:" + port).get(10, TimeUnit.SECONDS);
            TestSubscriber<byte[]> sub = new TestSubscriber<>();
            conn.publisher("counter").subscribe(sub);
            try (Socket first = RawSockets.accept(listener)) {
                first.getOutputStream().write(opening);
                ResumePositionTest.readUntil(first, f -> f instanceof Frame.Subscribe, ResumePositionTest.extension(FrameType.RESUME_ACK));
                listener.close(); // the port refuses from now on
            } // the transport breaks: the client reconnects after 50 ms, and is refused
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (conn.endpoint().attempts() < 2) { // the first attempt failed, the second is scheduled
                assertTrue(System.nanoTime() < deadline, "no second attempt: " + conn.endpoint().attempts());
                Thread.sleep(1);
            }
            try (ServerSocket again = new ServerSocket()) {
                again.setReuseAddress(true);
                again.bind(new java.net.InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), port), 1);
                try (Socket second = RawSockets.accept(again)) {
                    ResumePositionTest.readUntil(second, ResumePositionTest.extension(FrameType.RESUME));
                    assertTrue(conn.endpoint().attempts() >= 2, "resumed at attempt " + conn.endpoint().attempts());
                    second.getOutputStream().write(ResumePositionTest.concat(FrameWriter.encode(
                            new Frame.Hello(true, 0, List.of(FrameType.RESUME_EXTENSION)), 0), ResumeFrames.refused("gone")));
                    Throwable failed = sub.awaitTerminal();
                    assertTrue(failed instanceof ConnectionClosedException, String.valueOf(failed));
                    assertEquals(failed.getMessage(), "the server refused to resume the session: gone");
                }
            }
        } finally {
            listener.close();
        }
    }

    /** A resuming endpoint on an EmbeddedChannel whose clock moves only when the test says so, its hello exchanged. */
    private static EmbeddedChannel resuming(Endpoint endpoint, Frame... fromPeer) {
        EmbeddedChannel channel = new EmbeddedChannel(endpoint);
        channel.freezeTime();
        for (Frame f : fromPeer) {
            channel.writeInbound(Unpooled.wrappedBuffer(FrameWriter.encode(f, 0)));
        }
        channel.runPendingTasks();
        assertTrue(endpoint.facade().activeExtensions().contains(3L), endpoint.facade().activeExtensions().toString());
        return channel;
    }

    private static void advance(EmbeddedChannel channel, long millis) {
        channel.advanceTimeBy(millis, TimeUnit.MILLISECONDS);
        channel.runScheduledPendingTasks();
        channel.runPendingTasks();
    }

    @Test(timeOut = 10_000)
    public void aTransportSilentForTheStallTimeoutIsReplaced() throws Exception {
        // §16.7's stall_timeout (45 s, as rstreams'): a link that vanished without a reset is
        // taken for dead once nothing was read on it for that long; each read starts the wait
        // again. The client closes it and reconnects; the server closes it and waits for the resume.
        List<Integer> attempts = new ArrayList<>();
        Endpoint client = new Endpoint(Connection.Side.CLIENT, new Endpoint.Options(Limits.DEFAULT, new Routes(), null, null, null,
                null, null, null, new BuilderOptions().resumeOptions(null, null, (session, attempt) -> attempts.add(attempt)),
                null, true));
        EmbeddedChannel channel = resuming(client, new Frame.Hello(true, 0, List.of(3L)),
                new Frame.Extension(FrameType.RESUME_TOKEN, new byte[16]));
        advance(channel, 30_000);
        channel.writeInbound(Unpooled.wrappedBuffer(FrameWriter.encode(new Frame.Extension(FrameType.RESUME_ACK, ResumeFrames.varint(0)), 0)));
        advance(channel, STALL_DEFAULT - 1); // 45 s since the hello, not since the last read
        assertTrue(channel.isOpen(), "closed before the stall timeout counted from the last read");
        advance(channel, 1);
        assertTrue(!channel.isOpen(), "a transport silent for the stall timeout stayed open");
        assertTrue(!client.closedFuture().isDone(), "the session ended with its transport");
        advance(channel, ResumeFrames.BACKOFF_MILLIS);
        assertEquals(attempts, List.of(1), "the client reconnects after its first backoff");
        channel.finishAndReleaseAll();

        List<Boolean> forgotten = new ArrayList<>();
        Endpoint.Sessions table = new Endpoint.Sessions() {
            @Override
            public void register(byte[] token, Endpoint endpoint) {}

            @Override
            public void forget(byte[] token, Endpoint endpoint) {
                forgotten.add(true);
            }
        };
        Endpoint server = new Endpoint(Connection.Side.SERVER, new Endpoint.Options(Limits.DEFAULT, new Routes(), null, null, null,
                null, null, null, new BuilderOptions().resumeOptions(Duration.ofSeconds(30), table, null), null, true));
        EmbeddedChannel accepted = resuming(server, new Frame.Hello(false, 0, List.of(3L)));
        advance(accepted, STALL_DEFAULT - 1);
        assertTrue(accepted.isOpen(), "closed before the stall timeout");
        advance(accepted, 1);
        assertTrue(!accepted.isOpen(), "a transport silent for the stall timeout stayed open");
        assertTrue(!server.closedFuture().isDone() && forgotten.isEmpty(), "the session ended instead of waiting for its resume");
        advance(accepted, 30_000); // the session timeout
        assertTrue(server.closedFuture().isDone(), "the session outlived its session timeout");
        accepted.finishAndReleaseAll();
    }

    @Test(timeOut = 10_000)
    public void theStallTimeoutIsTheOneGivenAndNullTurnsItOff() {
        // stallTimeout(Duration) as rstreams' stall_timeout: a transport silent that long is
        // replaced; null: never, however long the silence; zero or negative: refused by name.
        List<Integer> attempts = new ArrayList<>();
        Endpoint client = new Endpoint(Connection.Side.CLIENT, new Endpoint.Options(Limits.DEFAULT, new Routes(), null, null, null,
                null, null, null, stalling(Duration.ofSeconds(2), (session, attempt) -> attempts.add(attempt)), null, true));
        EmbeddedChannel channel = resuming(client, new Frame.Hello(true, 0, List.of(3L)),
                new Frame.Extension(FrameType.RESUME_TOKEN, new byte[16]));
        advance(channel, 1_999);
        assertTrue(channel.isOpen(), "closed before its stall timeout of 2 s");
        advance(channel, 1);
        assertTrue(!channel.isOpen(), "a transport silent for its stall timeout of 2 s stayed open");
        advance(channel, ResumeFrames.BACKOFF_MILLIS);
        assertEquals(attempts, List.of(1), "the client reconnects after its first backoff");
        channel.finishAndReleaseAll();

        Endpoint off = new Endpoint(Connection.Side.CLIENT, new Endpoint.Options(Limits.DEFAULT, new Routes(), null, null, null,
                null, null, null, stalling(null, (session, attempt) -> attempts.add(attempt)), null, true));
        EmbeddedChannel silent = resuming(off, new Frame.Hello(true, 0, List.of(3L)),
                new Frame.Extension(FrameType.RESUME_TOKEN, new byte[16]));
        advance(silent, TimeUnit.HOURS.toMillis(1));
        assertTrue(silent.isOpen() && !off.closedFuture().isDone(), "a transport was taken for dead with the stall timeout off");
        assertEquals(attempts, List.of(1), "a reconnect with the stall timeout off");
        silent.finishAndReleaseAll();

        for (Duration bad : List.of(Duration.ZERO, Duration.ofSeconds(-1))) {
            IllegalArgumentException e = org.testng.Assert.expectThrows(IllegalArgumentException.class,
                    () -> RsioClient.builder().stallTimeout(bad));
            assertEquals(e.getMessage(), "stallTimeout must be > 0 (null: off), got " + bad);
            e = org.testng.Assert.expectThrows(IllegalArgumentException.class, () -> RsioServer.builder().stallTimeout(bad));
            assertEquals(e.getMessage(), "stallTimeout must be > 0 (null: off), got " + bad);
        }
    }

    @Test(timeOut = 10_000)
    public void anAttemptStalledInItsOpeningHandshakeIsClosedAtTheAttemptTimeout() {
        // The attempt's clock started when the transport was up, after a TLS or WebSocket
        // handshake: a server that accepted and never answered the upgrade held the attempt until
        // Netty's own 10 s handshake timeout. It starts with the pipeline now, as rstreams'
        // attempt_timeout bounds the whole attempt (§16.7); virtual time here.
        ChannelInboundHandlerAdapter handshaking = new ChannelInboundHandlerAdapter() {
            @Override
            public void channelActive(ChannelHandlerContext ctx) {
                // held back, as WebSocketBridge holds it until the opening handshake completes
            }
        };
        EmbeddedChannel channel = new EmbeddedChannel(handshaking, new ResumeHandshake(null));
        channel.advanceTimeBy(ResumeFrames.ATTEMPT_TIMEOUT_MILLIS - 1, TimeUnit.MILLISECONDS);
        channel.runScheduledPendingTasks();
        assertTrue(channel.isOpen(), "closed before the attempt timeout");
        channel.advanceTimeBy(1, TimeUnit.MILLISECONDS);
        channel.runScheduledPendingTasks();
        assertTrue(!channel.isOpen(), "a stalled attempt stayed open past the attempt timeout");
    }

    @Test(timeOut = 30_000)
    public void withoutResumeACutEndsTheStreams() throws Exception {
        try (RsioServer server = RsioServer.builder()
                .route("counter", Codec.INT64, r -> Counters.range(0, Long.MAX_VALUE))
                .bind("tcp://127.0.0.1:0");
             CuttingProxy proxy = new CuttingProxy("127.0.0.1", server.port());
             RsioClient client = RsioClient.builder().resume(true).build();
             RsioConnection conn = client.connect("tcp://127.0.0.1:" + proxy.port()).get(10, TimeUnit.SECONDS)) {
            TestSubscriber<Long> sub = new TestSubscriber<>();
            conn.publisher("counter", Codec.INT64).subscribe(sub);
            sub.request(1);
            sub.next();
            assertTrue(!conn.activeExtensions().contains(3L), "the server did not agree to resume");
            proxy.cut();
            assertTrue(sub.awaitTerminal() instanceof ConnectionClosedException);
        }
    }
}
