package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.rstreams.testing.PythonRstreams;
import io.rstreams.testing.RawSockets;
import io.rstreams.testing.RepoPaths;
import io.rstreams.testing.TestSubscriber;
import io.rstreams.wire.Credentials;
import io.rstreams.wire.ErrorCode;
import io.rstreams.wire.Frame;
import io.rstreams.wire.FrameParser;
import io.rstreams.wire.FrameType;
import io.rstreams.wire.FrameWriter;
import io.rstreams.wire.Limits;
import java.io.InputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.Test;

/**
 * A Java client's per-subscribe credentials (PROTOCOL.md §15.4), as rstreams'
 * {@code conn.publisher(name, auth=...)}: {@code publisher(name, codec, credentials)} sends
 * subscribeCredentials before each subscribe, after the server's hello, and the server checks
 * them instead of the connection's: against a Python server with authenticate and authorize
 * hooks and against the Java server's, refused ones ending that subscription with code 3,
 * unauthorized ones with code 4, the connection going on.
 */
public class SubscribeCredentialsTest {
    private static final String TOKEN = "subscribe-token";
    private static final String ROOT = "subscribe-root";

    private static <T> Throwable refusal(RemotePublisher<T> publisher) throws Exception {
        TestSubscriber<T> sub = new TestSubscriber<>();
        publisher.subscribe(sub);
        sub.request(5);
        Throwable error = sub.awaitTerminal();
        assertTrue(error instanceof RemoteStreamException && sub.all().isEmpty(), String.valueOf(error));
        return error;
    }

    private static <T> List<T> elements(RemotePublisher<T> publisher, int n) throws Exception {
        TestSubscriber<T> sub = new TestSubscriber<>();
        publisher.subscribe(sub);
        sub.request(n + 1);
        List<T> got = sub.take(n);
        assertNull(sub.awaitTerminal());
        return got;
    }

    @Test(timeOut = 60_000)
    public void aPythonServerChecksEachSubscribesOwnCredentials() throws Exception {
        Path script = RepoPaths.root().resolve("java/src/test/resources/python/authorize_server.py");
        try (PythonRstreams server = PythonRstreams.script(script, "tcp://127.0.0.1:0", TOKEN, ROOT);
             RsioClient client = RsioClient.builder().token(TOKEN).build();
             RsioConnection conn = client.connect(server.url()).get(10, TimeUnit.SECONDS)) {
            // the first subscribe may go out before the serverHello: it waits for it (§4.4)
            assertEquals(elements(conn.publisher("vault?to=2", Codec.UTF8, Credentials.token(ROOT)), 2), List.of("0", "1"));
            Throwable plain = refusal(conn.publisher("vault?to=2", Codec.UTF8));
            assertEquals(((RemoteStreamException) plain).errorCode(), ErrorCode.UNAUTHORIZED);
            assertEquals(plain.getMessage(), "unauthorized: subscribe to 'vault' is not allowed for this principal (PROTOCOL.md §15.4)");
            Throwable wrong = refusal(conn.publisher("counter?to=2", Codec.UTF8, Credentials.token("not-a-token")));
            assertEquals(((RemoteStreamException) wrong).errorCode(), ErrorCode.UNAUTHENTICATED);
            assertEquals(wrong.getMessage(), "unauthenticated: subscribe to 'counter' needs valid credentials (PROTOCOL.md §15.4)");
            assertTrue(!wrong.getMessage().contains("not-a-token"));
            assertEquals(elements(conn.publisher("counter?to=2", Codec.UTF8), 2), List.of("0", "1"), "the connection goes on");
            // its lines come through a pipe of their own: the last may be read after the elements
            String out = server.awaitOutput(o -> o.lines().filter(l -> l.startsWith("asked ")).count() >= 3, 10);
            List<String> asked = out.lines().filter(l -> l.startsWith("asked ")).toList();
            assertEquals(asked, List.of("asked root vault?to=2", "asked token vault?to=2", "asked token counter?to=2"), out);
        }
    }

    @Test(timeOut = 30_000)
    public void theJavaServerChecksThemToo() throws Exception {
        Map<String, String> asked = new ConcurrentHashMap<>();
        try (RsioServer server = RsioServer.builder()
                .authenticate(c -> TOKEN.equals(c.token()) || ROOT.equals(c.token()))
                .authorize((c, name) -> {
                    asked.put(name, c.token());
                    return !name.startsWith("vault") || ROOT.equals(c.token());
                })
                .route("vault", Codec.INT64, r -> Counters.range(0, 2))
                .route("news", Codec.INT64, r -> Counters.range(0, 2))
                .bind("tcp://127.0.0.1:0");
             RsioClient client = RsioClient.builder().token(TOKEN).build();
             RsioConnection conn = client.connect(server.url()).get(10, TimeUnit.SECONDS)) {
            assertEquals(elements(conn.publisher("vault", Codec.INT64, Credentials.token(ROOT)), 2), List.of(0L, 1L));
            Throwable wrong = refusal(conn.publisher("news", Codec.INT64, Credentials.userPassword("ann", "guess")));
            assertEquals(((RemoteStreamException) wrong).errorCode(), ErrorCode.UNAUTHENTICATED);
            assertEquals(elements(conn.publisher("news", Codec.INT64), 2), List.of(0L, 1L));
            assertEquals(asked, Map.of("vault", ROOT, "news", TOKEN), "the subscribe's own credentials, else the connection's");
        }
    }

    /**
     * A subscribe made before the serverHello waits for it: the client then sends its
     * authenticate, the subscribeCredentials and the subscribe, in that order (§4.4, §15.2).
     */
    @Test(timeOut = 30_000)
    public void aSubscribeBeforeTheServersHelloWaitsForIt() throws Exception {
        try (ServerSocket listener = RawSockets.listen();
             RsioClient client = RsioClient.builder().token(TOKEN).build()) {
            var connecting = client.connect("tcp://127.0.0.1:" + listener.getLocalPort());
            try (Socket peer = RawSockets.accept(listener);
                 RsioConnection conn = connecting.get(10, TimeUnit.SECONDS)) {
                TestSubscriber<Long> sub = new TestSubscriber<>();
                conn.publisher("vault", Codec.INT64, Credentials.token(ROOT)).subscribe(sub);
                sub.request(3);
                sub.subscribed.get(10, TimeUnit.SECONDS); // open() ran on the I/O thread: without a hello it sent nothing
                byte[] hello = FrameWriter.encode(new Frame.Hello(true, 0, List.of(FrameType.AUTH)), 0);
                peer.getOutputStream().write(hello);
                peer.getOutputStream().flush();
                List<Frame> frames = read(peer.getInputStream(), 4);
                assertTrue(frames.get(0) instanceof Frame.Hello h && h.extensions().contains(FrameType.AUTH), frames.toString());
                assertEquals(frames.get(1), new Frame.Extension(FrameType.AUTHENTICATE, Credentials.token(TOKEN).encode()));
                Frame.Extension own = (Frame.Extension) frames.get(2);
                assertEquals(own.type(), FrameType.SUBSCRIBE_CREDENTIALS);
                byte[] root = Credentials.token(ROOT).encode();
                assertEquals(own.payload()[0], (byte) 1, "subscriber id 1");
                assertTrue(Arrays.equals(Arrays.copyOfRange(own.payload(), 1, own.payload().length), root));
                assertEquals(frames.get(3), new Frame.Subscribe("vault", 1, 3));
                CompletableFuture<Void> closing = conn.closeAsync();
                RawSockets.answeringTheGoodbye(peer); // answered: the close ends now, not at its timeout
                closing.get(10, TimeUnit.SECONDS);
            }
        }
    }

    private static List<Frame> read(InputStream in, int n) throws Exception {
        FrameParser parser = new FrameParser(Limits.DEFAULT);
        List<Frame> frames = new ArrayList<>();
        byte[] buffer = new byte[4096];
        while (frames.size() < n) {
            int got = in.read(buffer);
            assertTrue(got >= 0, "the client closed after " + frames);
            parser.feed(buffer, 0, got);
            frames.addAll(parser.parseAll());
        }
        return frames;
    }

    @Test(timeOut = 30_000)
    public void aConnectionThatDoesNotAuthenticateCannotSendThem() throws Exception {
        try (RsioServer server = RsioServer.builder().route("news", Codec.INT64, r -> Counters.range(0, 2)).bind("tcp://127.0.0.1:0");
             RsioClient client = RsioClient.builder().build();
             RsioConnection conn = client.connect(server.url()).get(10, TimeUnit.SECONDS)) {
            IllegalStateException e = expectThrows(IllegalStateException.class,
                    () -> conn.publisher("news", Codec.INT64, Credentials.token(ROOT)));
            assertTrue(e.getMessage().contains("token(...)") && e.getMessage().contains("§15.2") && !e.getMessage().contains(ROOT),
                    e.getMessage());
        }
    }
}
