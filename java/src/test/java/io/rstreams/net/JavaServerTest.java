package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.Closing;
import io.rstreams.testing.TestSubscriber;
import io.rstreams.wire.Credentials;
import io.rstreams.wire.Frame;
import io.rstreams.wire.FrameParser;
import io.rstreams.wire.ProtocolException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Flow;
import java.util.concurrent.SubmissionPublisher;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/** The Java client against the Java server, in one process over loopback TCP. */
public class JavaServerTest {
    private RsioServer server;
    private RsioClient client;

    @BeforeClass(timeOut = 30_000)
    public void start() throws Exception {
        server = RsioServer.builder()
                .route("counter", Codec.INT64, r -> Counters.range(r.longParam("from", 0), r.longParam("to", Long.MAX_VALUE)))
                .route("text/{word}", Codec.UTF8, r -> Counters.repeat(r.param("word", "?"), r.longParam("n", 3)))
                .route("big", r -> Counters.repeat(bigElement(), r.longParam("n", 2)))
                .route("block", r -> Counters.repeat(new byte[(int) r.longParam("size", 1)], r.longParam("n", 1)))
                .bind("tcp://127.0.0.1:0");
        client = RsioClient.builder().build();
    }

    static byte[] bigElement() {
        byte[] b = new byte[300_000];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) (i * 31);
        }
        return b;
    }

    @AfterClass(alwaysRun = true)
    public void stop() throws Exception {
        Closing.all(client, server);
    }

    private RsioConnection connect() throws Exception {
        return client.connect(server.url()).get(10, TimeUnit.SECONDS);
    }

    @Test(timeOut = 30_000)
    public void packedInt64WithinDemand() throws Exception {
        try (RsioConnection conn = connect()) {
            TestSubscriber<Long> sub = new TestSubscriber<>();
            conn.publisher("counter?from=5&to=1005", Codec.INT64).subscribe(sub);
            sub.request(10);
            assertEquals(sub.take(10), List.of(5L, 6L, 7L, 8L, 9L, 10L, 11L, 12L, 13L, 14L));
            sub.request(Long.MAX_VALUE);
            assertEquals(sub.take(990).get(989), Long.valueOf(1004));
            assertNull(sub.awaitTerminal());
        }
    }

    @Test(timeOut = 30_000)
    public void patternParametersAndText() throws Exception {
        try (RsioConnection conn = connect()) {
            TestSubscriber<String> sub = new TestSubscriber<>();
            conn.publisher("text/hello%20there?n=2", Codec.UTF8).subscribe(sub);
            sub.request(5);
            assertEquals(sub.take(2), List.of("hello there", "hello there"));
            assertNull(sub.awaitTerminal());
        }
    }

    @Test(timeOut = 30_000)
    public void largeElementsAreSplitAndJoined() throws Exception {
        try (RsioConnection conn = connect()) {
            TestSubscriber<byte[]> sub = new TestSubscriber<>();
            conn.publisher("big?n=2").subscribe(sub);
            sub.request(2);
            for (byte[] got : sub.take(2)) {
                assertTrue(Arrays.equals(got, bigElement()));
            }
            assertNull(sub.awaitTerminal());
        }
    }

    @Test(timeOut = 30_000)
    public void aWideWindowOfElementsOfTheSplitSizeIsServed() throws Exception {
        // 64 KiB elements (the largest written whole) from a publisher that emits inside request(n),
        // 300 asked for at once: the server asked its publisher for 256 before the first element
        // told their size, wrote 16 MiB and a little more in one turn and said goodbye to its
        // peer for more than MAX_UNSENT unsent bytes (the 64 KiB rows of the JVM benchmark).
        try (RsioConnection conn = connect()) {
            TestSubscriber<byte[]> sub = new TestSubscriber<>();
            conn.publisher("block?size=65536&n=300").subscribe(sub);
            sub.request(300);
            assertEquals(sub.take(300).size(), 300);
            assertNull(sub.awaitTerminal());
        }
    }

    @Test(timeOut = 30_000)
    public void unknownNameIsRefusedWithOnError() throws Exception {
        try (RsioConnection conn = connect()) {
            TestSubscriber<byte[]> sub = new TestSubscriber<>();
            conn.publisher("nothing/here").subscribe(sub);
            Throwable error = sub.awaitTerminal();
            assertTrue(error instanceof RemoteStreamException, String.valueOf(error));
            assertEquals(error.getMessage(), "no publisher named 'nothing/here'");
        }
    }

    @Test(timeOut = 30_000)
    public void cancelStopsTheStreamAndTheIdIsReused() throws Exception {
        try (RsioConnection conn = connect()) {
            TestSubscriber<Long> first = new TestSubscriber<>();
            conn.publisher("counter", Codec.INT64).subscribe(first);
            first.request(3);
            assertEquals(first.take(3), List.of(0L, 1L, 2L));
            first.subscription().cancel();
            TestSubscriber<Long> second = new TestSubscriber<>();
            conn.publisher("counter?from=100&to=102", Codec.INT64).subscribe(second);
            second.request(5);
            assertEquals(second.take(2), List.of(100L, 101L));
            assertNull(second.awaitTerminal());
            assertEquals(first.all().size(), 3);
            assertTrue(!first.terminated.isDone(), "a cancelled subscriber gets no terminal signal");
        }
    }

    @Test(timeOut = 30_000)
    public void aRequestOfZeroFailsTheSubscriberNamingRule39() throws Exception {
        try (RsioConnection conn = connect()) {
            TestSubscriber<Long> sub = new TestSubscriber<>();
            conn.publisher("counter", Codec.INT64).subscribe(sub);
            sub.request(0);
            Throwable error = sub.awaitTerminal();
            assertTrue(error instanceof IllegalArgumentException, String.valueOf(error));
            assertEquals(error.getMessage(), "rule 3.9: request(n) needs an int n > 0 (non-positive subscription request), got 0");
        }
    }

    @Test(timeOut = 30_000)
    public void closingEndsOpenStreamsWithAnError() throws Exception {
        RsioConnection conn = connect();
        TestSubscriber<Long> sub = new TestSubscriber<>();
        conn.publisher("counter", Codec.INT64).subscribe(sub);
        sub.request(1);
        sub.next();
        conn.close();
        assertTrue(sub.awaitTerminal() instanceof ConnectionClosedException);
        assertTrue(conn.onClose().isDone());
    }

    @Test(timeOut = 30_000)
    public void aServerRequiringATokenServesOnlyClientsThatPresentIt() throws Exception {
        try (RsioServer guarded = RsioServer.builder()
                .token("t0ken")
                .route("counter", Codec.INT64, r -> Counters.range(0, 3))
                .bind("tcp://127.0.0.1:0");
             RsioClient good = RsioClient.builder().token("t0ken").build();
             RsioClient bad = RsioClient.builder().token("nope").build();
             RsioConnection ok = good.connect(guarded.url()).get(10, TimeUnit.SECONDS);
             RsioConnection refused = bad.connect(guarded.url()).get(10, TimeUnit.SECONDS);
             RsioConnection anonymous = client.connect(guarded.url()).get(10, TimeUnit.SECONDS)) {
            TestSubscriber<Long> sub = new TestSubscriber<>();
            ok.publisher("counter", Codec.INT64).subscribe(sub);
            sub.request(5);
            assertEquals(sub.take(3), List.of(0L, 1L, 2L));
            assertNull(sub.awaitTerminal());

            TestSubscriber<Long> wrong = new TestSubscriber<>();
            refused.publisher("counter", Codec.INT64).subscribe(wrong);
            wrong.request(5);
            Throwable e1 = wrong.awaitTerminal();
            assertTrue(e1 instanceof ConnectionClosedException && e1.getMessage().contains("authentication failed"), String.valueOf(e1));
            assertTrue(!e1.getMessage().contains("nope"), "no secret in messages");

            TestSubscriber<Long> none = new TestSubscriber<>();
            anonymous.publisher("counter", Codec.INT64).subscribe(none);
            none.request(5);
            Throwable e2 = none.awaitTerminal();
            assertTrue(e2 instanceof ConnectionClosedException && e2.getMessage().contains("authentication required"), String.valueOf(e2));
            assertTrue(wrong.all().isEmpty() && none.all().isEmpty(), "held subscribes were never served");
        }
    }

    @Test(timeOut = 30_000)
    public void aServerCheckingUserAndPasswordServesOnlyTheRightPair() throws Exception {
        try (RsioServer guarded = RsioServer.builder()
                .authenticate(c -> "ann".equals(c.user()) && "pa55-word".equals(c.password()))
                .route("counter", Codec.INT64, r -> Counters.range(0, 3))
                .bind("tcp://127.0.0.1:0");
             RsioClient good = RsioClient.builder().userPassword("ann", "pa55-word").build();
             RsioClient bad = RsioClient.builder().credentials(Credentials.userPassword("ann", "guess")).build();
             RsioConnection ok = good.connect(guarded.url()).get(10, TimeUnit.SECONDS);
             RsioConnection refused = bad.connect(guarded.url()).get(10, TimeUnit.SECONDS)) {
            TestSubscriber<Long> sub = new TestSubscriber<>();
            ok.publisher("counter", Codec.INT64).subscribe(sub);
            sub.request(5);
            assertEquals(sub.take(3), List.of(0L, 1L, 2L));
            assertNull(sub.awaitTerminal());

            TestSubscriber<Long> wrong = new TestSubscriber<>();
            refused.publisher("counter", Codec.INT64).subscribe(wrong);
            wrong.request(5);
            Throwable e = wrong.awaitTerminal();
            assertTrue(e instanceof ConnectionClosedException && e.getMessage().contains("authentication failed"), String.valueOf(e));
            assertTrue(!e.getMessage().contains("guess") && wrong.all().isEmpty(), e.getMessage());
        }
    }

    @Test(timeOut = 30_000)
    public void credentialsTowardsAServerWithoutAuthEndTheConnectionSayingSo() throws Exception {
        try (RsioClient withPassword = RsioClient.builder().userPassword("ann", "pa55-word").build();
             RsioConnection conn = withPassword.connect(server.url()).get(10, TimeUnit.SECONDS)) {
            TestSubscriber<Long> sub = new TestSubscriber<>();
            conn.publisher("counter", Codec.INT64).subscribe(sub);
            sub.request(1);
            Throwable e = sub.awaitTerminal();
            assertTrue(e instanceof ConnectionClosedException && e.getMessage().contains("authentication not possible: the server does not offer extension auth (id 2) (PROTOCOL.md §15.2)"),
                    String.valueOf(e));
        }
    }

    @Test(timeOut = 30_000)
    public void bothEndsServeAndSubscribeOnOneConnection() throws Exception {
        try (RsioServer relay = RsioServer.builder()
                .route("doubled", Codec.INT64, r -> subscriber -> r.connection().publisher("numbers", Codec.INT64)
                        .subscribe(new Flow.Subscriber<Long>() {
                            @Override
                            public void onSubscribe(Flow.Subscription s) {
                                subscriber.onSubscribe(s);
                            }

                            @Override
                            public void onNext(Long item) {
                                subscriber.onNext(item * 2);
                            }

                            @Override
                            public void onError(Throwable t) {
                                subscriber.onError(t);
                            }

                            @Override
                            public void onComplete() {
                                subscriber.onComplete();
                            }
                        }))
                .bind("tcp://127.0.0.1:0");
             RsioClient serving = RsioClient.builder().serve("numbers", Codec.INT64, r -> Counters.range(1, 6)).build();
             RsioConnection conn = serving.connect(relay.url()).get(10, TimeUnit.SECONDS)) {
            TestSubscriber<Long> sub = new TestSubscriber<>();
            conn.publisher("doubled", Codec.INT64).subscribe(sub);
            sub.request(2);
            assertEquals(sub.take(2), List.of(2L, 4L));
            sub.request(10);
            assertEquals(sub.take(3), List.of(6L, 8L, 10L));
            assertNull(sub.awaitTerminal());
        }
    }

    @Test(timeOut = 30_000)
    public void aClientThatOnlyReadsIsNotIdle() throws Exception {
        // §14.2: output the peer takes counts as activity; the client sends nothing after its subscribe
        try (RsioServer strict = RsioServer.builder()
                .idleTimeout(java.time.Duration.ofMillis(500))
                .route("ticks", Codec.INT64, r -> reactor.adapter.JdkFlowAdapter.publisherToFlowPublisher(
                        // buffered: the client's request may come after the first tick on a loaded machine
                        reactor.core.publisher.Flux.interval(java.time.Duration.ofMillis(50)).take(40).onBackpressureBuffer()))
                .bind("tcp://127.0.0.1:0");
             RsioClient quiet = RsioClient.builder().keepalive(null).build();
             RsioConnection conn = quiet.connect(strict.url()).get(10, TimeUnit.SECONDS)) {
            TestSubscriber<Long> sub = new TestSubscriber<>();
            conn.publisher("ticks", Codec.INT64).subscribe(sub);
            sub.request(Long.MAX_VALUE);
            assertNull(sub.awaitTerminal(), "the stream completed instead of the connection being closed as idle");
            assertEquals(sub.all().size(), 40);
        }
    }

    @Test(timeOut = 30_000)
    public void aSubmissionPublisherCanBeServed() throws Exception {
        try (SubmissionPublisher<String> source = new SubmissionPublisher<>();
             RsioServer local = RsioServer.builder().route("live", Codec.UTF8, r -> source).bind("tcp://127.0.0.1:0");
             RsioConnection conn = client.connect(local.url()).get(10, TimeUnit.SECONDS)) {
            TestSubscriber<String> sub = new TestSubscriber<>();
            conn.publisher("live", Codec.UTF8).subscribe(sub);
            sub.request(2);
            while (source.getNumberOfSubscribers() == 0) {
                Thread.onSpinWait();
            }
            source.submit("a");
            source.submit("b");
            assertEquals(sub.take(2), List.of("a", "b"));
        }
    }

    @Test(timeOut = 60_000)
    public void aPeerThatWritesAndNeverReadsIsClosedBeforeItsRepliesPileUp() throws Exception {
        // 32 MiB of pings, none of the pongs read: the server used to keep every pong it could not
        // write (its heap grew by the size of the input); it now stops reading the peer once
        // LOW_WATER of pongs are unsent, says goodbye after its unread timeout and closes, and
        // the pings it did not read are never answered (§6.3; MAX_UNSENT stays the last resort).
        byte[] pings = new byte[10 * 100_000];
        for (int k = 0; k < pings.length; k += 10) {
            pings[k] = (byte) 0x80; // ping, 8-byte payload
            pings[k + 1] = 8;
        }
        long written = 0;
        long read = 0;
        try (RsioServer local = RsioServer.builder().route("counter", Codec.INT64, r -> Counters.range(0, 3))
                .unreadTimeout(java.time.Duration.ofSeconds(1))
                .bind("tcp://127.0.0.1:0");
             Socket socket = new Socket()) {
            socket.setReceiveBufferSize(4096);
            socket.connect(new InetSocketAddress("127.0.0.1", local.port()));
            socket.setSoTimeout(10_000);
            OutputStream out = socket.getOutputStream();
            out.write(new byte[] {0x01, 0x00, 0x01, 0x01}); // clientHello offering keepalive
            try {
                while (written < 32L << 20) {
                    out.write(pings);
                    written += pings.length;
                }
            } catch (IOException closed) {
                // the server closed while we wrote
            }
            InputStream in = socket.getInputStream();
            byte[] buffer = new byte[1 << 16];
            try {
                for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
                    read += n;
                }
            } catch (SocketException reset) {
                // closed with input unread: a reset ends our reading too
            }
        }
        assertTrue(read < written - (4L << 20), "the server answered " + read + " bytes of " + written + " of pings");
    }

    @Test(timeOut = 30_000)
    public void aRequestCancelledAndTheIdSubscribedAgainInOneReadSendsNothingOnTheNewId() throws Exception {
        // request, cancel and a new subscribe of the same id in one read: Connection parsed them
        // all before Endpoint handled the events, so the cancelled stream's Demand drained into
        // the new id 3 (IllegalStateException: onNext before onSubscribe, out of channelRead) and
        // the transport was closed without answering our goodbye.
        try (RsioServer local = RsioServer.builder().route("counter", Codec.INT64, r -> Counters.range(0, 1000))
                .bind("tcp://127.0.0.1:0");
             Socket socket = new Socket("127.0.0.1", local.port())) {
            socket.setSoTimeout(10_000);
            OutputStream out = socket.getOutputStream();
            InputStream in = socket.getInputStream();
            byte[] subscribe = {0x04, 0x07, 'c', 'o', 'u', 'n', 't', 'e', 'r', 0x03, 0x02}; // id 3, demand 2
            out.write(new byte[] {0x01, 0x00, 0x00}); // clientHello
            out.write(subscribe);
            FrameParser parser = new FrameParser(io.rstreams.wire.Limits.DEFAULT);
            List<Frame> frames = new ArrayList<>();
            readUntil(in, parser, frames, f -> elements(f) >= 2); // both elements of the first id 3: its stream is started
            byte[] again = {0x05, 0x03, 0x32, 0x06, 0x03}; // request(3, 50), cancel(3)
            java.io.ByteArrayOutputStream one = new java.io.ByteArrayOutputStream();
            one.write(again);
            one.write(subscribe);
            out.write(one.toByteArray()); // one write, one read
            frames.clear();
            readUntil(in, parser, frames, f -> { // the cancel's onComplete, then the new id 3's two elements
                int acknowledged = indexOf(f, Frame.OnComplete.class);
                return acknowledged >= 0 && elements(f.subList(acknowledged + 1, f.size())) >= 2;
            });
            out.write(new byte[] {0x03, 0x03, 'b', 'y', 'e'});
            frames.clear();
            readUntil(in, parser, frames, f -> indexOf(f, Frame.Goodbye.class) >= 0); // the answer to our goodbye
        }
    }

    @Test(timeOut = 30_000)
    public void theAnswerToAGoodbyeReachesAPeerThatGoesOnWritingAfterIt() throws Exception {
        // A peer that goes on writing after its goodbye (it must not, §9.1): the server wrote its
        // answer behind a stream's elements and closed as soon as that was handed to the socket,
        // with the peer's later bytes unread. Closing with unread input resets the connection and
        // drops what the kernel had not sent yet: the peer's input ended inside a frame, without
        // the answer (fuzz_polyglot.py java --pure 100000 101 600, input 3). The server now closes
        // its sending side after the answer and discards input until the peer closes, as after
        // an error goodbye (§10). It writes less than LINGER_BYTES after its goodbye: past that
        // much discarded input the server closes at once and resets a peer still writing
        // (docs/security.md), which drops what the kernel had not sent yet, the answer included.
        byte[] pings = new byte[10 * 10_000];
        for (int k = 0; k < pings.length; k += 10) {
            pings[k] = (byte) 0x80; // ping, 8-byte payload
            pings[k + 1] = 8;
        }
        try (RsioServer local = RsioServer.builder().route("counter", Codec.INT64, r -> Counters.range(0, Long.MAX_VALUE))
                .bind("tcp://127.0.0.1:0");
             Socket socket = new Socket()) {
            socket.setReceiveBufferSize(4096);
            socket.connect(new InetSocketAddress("127.0.0.1", local.port()));
            socket.setSoTimeout(10_000);
            OutputStream out = socket.getOutputStream();
            out.write(new byte[] {0x01, 0x00, 0x01, 0x01}); // clientHello offering keepalive
            out.write(new byte[] {0x04, 0x07, 'c', 'o', 'u', 'n', 't', 'e', 'r', 0x01, (byte) 0xC0, (byte) 0x84, 0x3D}); // id 1, demand 1,000,000
            InputStream in = socket.getInputStream();
            FrameParser parser = new FrameParser(io.rstreams.wire.Limits.DEFAULT);
            List<Frame> frames = new ArrayList<>();
            readUntil(in, parser, frames, f -> elements(f) > 0); // the stream is under way: its elements back up
            out.write(new byte[] {0x03, 0x03, 'b', 'y', 'e'});
            java.util.concurrent.atomic.AtomicBoolean reading = new java.util.concurrent.atomic.AtomicBoolean(true);
            Thread writer = new Thread(() -> {
                try {
                    for (long written = 0; reading.get() && written + pings.length < Endpoint.LINGER_BYTES / 2; written += pings.length) {
                        out.write(pings); // after our goodbye, until our input ends or half the linger cap is written
                    }
                } catch (IOException closed) {
                    // the server closed
                }
            });
            writer.start();
            byte[] buffer = new byte[1 << 16];
            SocketException reset = null;
            try {
                for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
                    parser.feed(buffer, 0, n);
                    frames.addAll(parser.parseAll());
                }
            } catch (SocketException e) {
                reset = e;
            }
            reading.set(false);
            socket.close();
            writer.join();
            assertNull(reset, "the server reset the connection (its answer may be lost)");
            assertTrue(frames.get(frames.size() - 1) instanceof Frame.Goodbye, "the answer to our goodbye did not come last: " + frames.size());
            assertEquals(parser.buffered(), 0, "our input ended inside a frame");
        }
    }

    /** Reads and parses frames into {@code frames} until {@code enough} holds for them; the server closing first fails the test. */
    private static void readUntil(InputStream in, FrameParser parser, List<Frame> frames, Predicate<List<Frame>> enough)
            throws IOException, ProtocolException {
        byte[] buffer = new byte[1 << 16];
        while (!enough.test(frames)) {
            int n = in.read(buffer);
            assertTrue(n > 0, "the server closed the connection: " + frames);
            parser.feed(buffer, 0, n);
            frames.addAll(parser.parseAll());
        }
    }

    /** Elements among {@code frames}: one per onNext, its count per onNextPacked. */
    private static long elements(List<Frame> frames) {
        long n = 0;
        for (Frame f : frames) {
            if (f instanceof Frame.OnNext) {
                n++;
            } else if (f instanceof Frame.OnNextPacked p) {
                n += p.count();
            }
        }
        return n;
    }

    /** The index of the first frame of type {@code type} among {@code frames}, -1 if none. */
    private static int indexOf(List<Frame> frames, Class<? extends Frame> type) {
        for (int i = 0; i < frames.size(); i++) {
            if (type.isInstance(frames.get(i))) {
                return i;
            }
        }
        return -1;
    }
}
