package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.rstreams.testing.Closing;
import io.rstreams.testing.RawSockets;
import io.rstreams.testing.TestSubscriber;
import io.rstreams.wire.ContentTypes;
import io.rstreams.wire.ErrorCode;
import io.rstreams.wire.Frame;
import io.rstreams.wire.FrameWriter;
import io.rstreams.wire.SubscribeMetadata;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/**
 * Extensions content-types (PROTOCOL.md §17) and metadata (§18) between the Java client and the
 * Java server over loopback TCP: routes state their codec's media type, a client sees it and
 * refuses a contradicting codec, a subscribe's metadata reaches the factory and the authorize
 * hook, which may refuse with a code of its own.
 */
public class ContentMetadataNetTest {
    private static final String TOKEN = "content-token";
    private final Map<String, String> asked = new ConcurrentHashMap<>();
    private RsioServer server;
    private RsioClient client;
    private RsioConnection conn;

    @BeforeClass(timeOut = 30_000)
    public void start() throws Exception {
        server = RsioServer.builder()
                .token(TOKEN)
                .authorize((credentials, name, metadata) -> {
                    asked.put(name, String.valueOf(metadata.text("x-tenant")));
                    if ("over".equals(metadata.text("x-tenant"))) {
                        throw new RemoteStreamException("quota exceeded for tenant over", ErrorCode.UNAVAILABLE);
                    }
                    return !"nobody".equals(metadata.text("x-tenant"));
                })
                .route("words", Codec.UTF8, r -> Counters.repeat("hé", 2))
                .route("longs", Codec.INT64, r -> Counters.range(0, 3))
                .route("raw", r -> Counters.repeat(new byte[] {1, 2}, 1))
                .route("png", Codec.BYTES.withContentType("image/png"), r -> Counters.repeat(new byte[] {(byte) 0x89}, 1))
                .route("echo", Codec.UTF8, r -> Counters.repeat(r.metadata().texts().toString(), 1))
                .route("negotiated", r -> {
                    String accept = r.metadata().text("accept");
                    return ContentTypedPublisher.withContentType(Counters.repeat("{}".getBytes(StandardCharsets.UTF_8), 1),
                            accept == null ? ContentTypes.OCTET_STREAM : accept);
                })
                .bind("tcp://127.0.0.1:0");
        client = RsioClient.builder().token(TOKEN).build();
        conn = client.connect(server.url()).get(10, TimeUnit.SECONDS);
    }

    @AfterClass(alwaysRun = true)
    public void stop() throws Exception {
        Closing.all(client, server);
    }

    private static <T> TestSubscriber<T> read(RemotePublisher<T> publisher, long n) throws Exception {
        TestSubscriber<T> s = new TestSubscriber<>();
        publisher.subscribe(s);
        s.request(n);
        return s;
    }

    @Test(timeOut = 20_000)
    public void bothEndsOfferBothExtensions() {
        assertTrue(conn.activeExtensions().containsAll(List.of(4L, 5L)), conn.activeExtensions().toString());
    }

    @Test(timeOut = 20_000)
    public void aRouteStatesItsCodecsTypeAndTheClientSeesIt() throws Exception {
        RemotePublisher<String> words = conn.publisher("words", Codec.UTF8);
        assertTrue(words.contentType().isEmpty());
        TestSubscriber<String> s = read(words, 5);
        assertNull(s.awaitTerminal());
        assertEquals(s.all(), List.of("hé", "hé"));
        assertEquals(words.contentType().orElseThrow(), ContentTypes.TEXT_UTF8);

        RemotePublisher<Long> longs = conn.publisher("longs", Codec.INT64);
        TestSubscriber<Long> l = read(longs, 5);
        assertNull(l.awaitTerminal());
        assertEquals(l.all(), List.of(0L, 1L, 2L));
        assertEquals(longs.contentType().orElseThrow(), ContentTypes.INT64_LE);

        RemotePublisher<byte[]> png = conn.publisher("png");
        assertNull(read(png, 1).awaitTerminal());
        assertEquals(png.contentType().orElseThrow(), "image/png");
    }

    @Test(timeOut = 20_000)
    public void aRouteWithoutATypeStatesNone() throws Exception {
        RemotePublisher<byte[]> raw = conn.publisher("raw");
        assertNull(read(raw, 1).awaitTerminal());
        assertTrue(raw.contentType().isEmpty());
    }

    /** §17.2: an explicit codec that decodes another type fails the subscription locally, and the connection goes on. */
    @Test(timeOut = 20_000)
    public void aCodecThatContradictsTheAnnouncementFailsWithContentTypeException() throws Exception {
        RemotePublisher<Long> wrong = conn.publisher("words", Codec.INT64);
        TestSubscriber<Long> s = read(wrong, 5);
        Throwable error = s.awaitTerminal();
        assertTrue(error instanceof ContentTypeException, String.valueOf(error));
        ContentTypeException e = (ContentTypeException) error;
        assertEquals(e.announced(), ContentTypes.TEXT_UTF8);
        assertEquals(e.expected(), ContentTypes.INT64_LE);
        assertEquals(e.getMessage(), "publisher 'words' announces 'text/plain; charset=utf-8' (PROTOCOL.md §17.2), but the codec "
                + "given decodes 'application/vnd.rsio.int64le'; subscribe with Codec.BYTES for the bytes");
        assertTrue(s.all().isEmpty(), "no element is decoded as the wrong type");
        TestSubscriber<byte[]> bytes = read(conn.publisher("words"), 5); // Codec.BYTES: the bytes, whatever the type
        assertNull(bytes.awaitTerminal());
        assertEquals(new String(bytes.all().get(0), StandardCharsets.UTF_8), "hé");
    }

    @Test(timeOut = 20_000)
    public void theFactorySeesTheSubscribesMetadata() throws Exception {
        SubscribeMetadata md = SubscribeMetadata.of(Map.of("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
        TestSubscriber<String> s = read(conn.publisher("echo", Codec.UTF8, md), 1);
        assertNull(s.awaitTerminal());
        assertEquals(s.all(), List.of("{traceparent=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01}"));
        TestSubscriber<String> none = read(conn.publisher("echo", Codec.UTF8), 1);
        assertNull(none.awaitTerminal());
        assertEquals(none.all(), List.of("{}"));
    }

    /** The factory chooses the type from the subscribe's accept entry (§17.1, §18). */
    @Test(timeOut = 20_000)
    public void aFactoryCanAnswerInTheAcceptedType() throws Exception {
        RemotePublisher<byte[]> json = conn.publisher("negotiated", Codec.BYTES, SubscribeMetadata.of(Map.of("accept", "application/json")));
        assertNull(read(json, 1).awaitTerminal());
        assertEquals(json.contentType().orElseThrow(), ContentTypes.JSON);
    }

    @Test(timeOut = 20_000)
    public void authorizeSeesTheMetadataAndMayRefuseWithItsOwnCode() throws Exception {
        TestSubscriber<String> ok = read(conn.publisher("words", Codec.UTF8, SubscribeMetadata.of(Map.of("x-tenant", "acme"))), 5);
        assertNull(ok.awaitTerminal());
        assertEquals(asked.get("words"), "acme");

        Throwable refused = read(conn.publisher("words", Codec.UTF8, SubscribeMetadata.of(Map.of("x-tenant", "nobody"))), 1).awaitTerminal();
        assertTrue(refused instanceof RemoteStreamException, String.valueOf(refused));
        assertEquals(refused.getMessage(), "unauthorized: subscribe to 'words' is not allowed for this principal (PROTOCOL.md §15.4)");
        assertEquals(((RemoteStreamException) refused).errorCode(), ErrorCode.UNAUTHORIZED);

        Throwable over = read(conn.publisher("words", Codec.UTF8, SubscribeMetadata.of(Map.of("x-tenant", "over"))), 1).awaitTerminal();
        assertTrue(over instanceof RemoteStreamException, String.valueOf(over));
        assertEquals(over.getMessage(), "quota exceeded for tenant over");
        assertEquals(((RemoteStreamException) over).errorCode(), ErrorCode.UNAVAILABLE);
        assertTrue(conn.isOpen(), "a refusal ends the subscription, not the connection");
    }

    @Test(timeOut = 20_000)
    public void badMediaTypesAndKeysAreRefusedWhereTheyAreGiven() {
        IllegalArgumentException e = expectThrows(IllegalArgumentException.class, () -> Codec.BYTES.withContentType("png"));
        assertTrue(e.getMessage().endsWith("(PROTOCOL.md §17.1)"), e.getMessage());
        expectThrows(IllegalArgumentException.class, () -> ContentTypedPublisher.withContentType(Counters.repeat(new byte[0], 1), ""));
        expectThrows(IllegalArgumentException.class, () -> SubscribeMetadata.of(Map.of("Bad Key", "v")));
    }

    /**
     * A peer without extension metadata (a raw server whose hello lists none): the subscribe goes
     * without the entries, or, with metadataRequired, not at all (§18.1).
     */
    @Test(timeOut = 20_000)
    public void toAPeerWithoutTheExtensionMetadataIsDroppedOrTheSubscriptionFails() throws Exception {
        try (ServerSocket listener = RawSockets.listen();
             RsioClient plain = RsioClient.builder().keepalive(null).build()) {
            RsioConnection c = plain.connect("tcp://127.0.0.1:" + listener.getLocalPort()).get(10, TimeUnit.SECONDS);
            try (Socket peer = RawSockets.accept(listener)) {
                OutputStream out = peer.getOutputStream();
                out.write(FrameWriter.encode(new Frame.Hello(true, 0, List.of()), 0));
                out.flush();
                SubscribeMetadata md = SubscribeMetadata.of(Map.of("x", "1"));
                TestSubscriber<byte[]> required = read(c.publisher("a", Codec.BYTES, md, true), 1);
                Throwable error = required.awaitTerminal();
                assertTrue(error instanceof IllegalStateException, String.valueOf(error));
                assertTrue(error.getMessage().startsWith("can't subscribe to 'a' with metadataRequired=true: the peer does not offer "
                        + "extension metadata (id 5) (PROTOCOL.md §18.1)"), error.getMessage());
                read(c.publisher("b", Codec.BYTES, md), 1);
                c.closeAsync();
                List<Frame> frames = RawSockets.answeringTheGoodbye(peer);
                List<Frame> subscribes = frames.stream().filter(f -> f instanceof Frame.Subscribe || f instanceof Frame.Extension).toList();
                assertEquals(subscribes.size(), 1, frames.toString()); // no subscribeMetadata, no subscribe to 'a'
                assertEquals(((Frame.Subscribe) subscribes.get(0)).publisher(), "b", frames.toString());
            }
        }
    }
}
