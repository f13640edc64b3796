package io.rstreams.wire;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertNotNull;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertThrows;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.rstreams.testing.Hex;
import io.rstreams.testing.Json;
import io.rstreams.testing.RepoPaths;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.testng.annotations.DataProvider;
import org.testng.annotations.Test;

/**
 * Extensions content-types (PROTOCOL.md §17) and metadata (§18) in the sans-I/O core: their
 * payloads of docs/protocol-vectors.json (valid and invalid), and both qualifiers' rules on a
 * connection (sent only while active, adjacent to what they qualify, refused citing §17.1/§18.1).
 */
public class ContentMetadataTest {
    private static final Set<Long> BOTH = Set.of(FrameType.CONTENT_TYPES, FrameType.METADATA);

    @SuppressWarnings("unchecked")
    private static Map<String, Object> doc() throws IOException {
        String text = Files.readString(RepoPaths.root().resolve("docs/protocol-vectors.json"), StandardCharsets.UTF_8);
        return (Map<String, Object>) Json.parse(text);
    }

    @Test(timeOut = 10_000)
    public void contentTypeVectorsReadAndWriteAsTheyShow() throws Exception {
        List<Map<String, Object>> vectors = VectorPayloadsTest.vectorsOf("contentType");
        assertFalse(vectors.isEmpty(), "no contentType vector");
        for (Map<String, Object> v : vectors) {
            byte[] payload = VectorPayloadsTest.payload(v);
            Map<String, Object> fields = VectorPayloadsTest.fields(v);
            ContentTypes.Announced got = ContentTypes.decode(payload);
            assertEquals(BigInteger.valueOf(got.subscriber()), fields.get("subscriber"));
            assertEquals(got.mediaType(), fields.get("media_type"));
            assertEquals(Hex.encode(ContentTypes.encode(got.subscriber(), got.mediaType())), Hex.encode(payload));
        }
    }

    @Test(timeOut = 10_000)
    @SuppressWarnings("unchecked")
    public void subscribeMetadataVectorsReadAndWriteAsTheyShow() throws Exception {
        List<Map<String, Object>> vectors = VectorPayloadsTest.vectorsOf("subscribeMetadata");
        assertFalse(vectors.isEmpty(), "no subscribeMetadata vector");
        for (Map<String, Object> v : vectors) {
            byte[] payload = VectorPayloadsTest.payload(v);
            Map<String, Object> fields = VectorPayloadsTest.fields(v);
            SubscribeMetadata.Received got = SubscribeMetadata.decode(payload, SubscribeMetadata.MAX_BYTES, SubscribeMetadata.MAX_ENTRIES);
            assertEquals(BigInteger.valueOf(got.subscriber()), fields.get("subscriber"));
            Map<String, Object> entries = (Map<String, Object>) fields.get("entries");
            Map<String, Object> values = new LinkedHashMap<>();
            for (Map.Entry<String, Object> e : entries.entrySet()) {
                byte[] value = Hex.decode((String) ((Map<String, Object>) e.getValue()).get("hex"));
                assertEquals(Hex.encode(got.metadata().get(e.getKey())), Hex.encode(value));
                values.put(e.getKey(), value);
            }
            assertEquals(got.metadata().keys(), entries.keySet());
            assertEquals(Hex.encode(SubscribeMetadata.of(values).encode(got.subscriber())), Hex.encode(payload));
        }
    }

    @DataProvider(name = "invalid")
    @SuppressWarnings("unchecked")
    public Object[][] invalid() throws IOException {
        List<Object[]> out = new ArrayList<>();
        for (Map<String, Object> v : (List<Map<String, Object>>) doc().get("invalid_payloads")) {
            if (v.get("type").equals("contentType") || v.get("type").equals("subscribeMetadata")) {
                out.add(new Object[] {v.get("type") + ": " + v.get("note"), v});
            }
        }
        assertTrue(out.size() >= 7, "expected the content-types and metadata invalid payloads, got " + out.size());
        return out.toArray(Object[][]::new);
    }

    /** Each invalid payload is refused citing its section, and on a connection ends it with that goodbye. */
    @Test(dataProvider = "invalid", timeOut = 10_000)
    public void invalidPayloadsAreRefusedCitingTheirSection(String note, Map<String, Object> vector) {
        byte[] payload = Hex.decode((String) vector.get("payload"));
        String cited = "(PROTOCOL.md §" + vector.get("section") + ")";
        boolean content = vector.get("type").equals("contentType");
        ProtocolException e = expectThrows(ProtocolException.class, () -> {
            if (content) {
                ContentTypes.decode(payload);
            } else {
                SubscribeMetadata.decode(payload, SubscribeMetadata.MAX_BYTES, SubscribeMetadata.MAX_ENTRIES);
            }
        });
        assertTrue(e.getMessage().endsWith(cited), note + ": " + e.getMessage());

        Connection c = new Connection(content ? Connection.Side.CLIENT : Connection.Side.SERVER, Limits.DEFAULT, BOTH);
        feed(c, Hex.encode(FrameWriter.encode(new Frame.Hello(content, 0, List.of(4L, 5L)), 0)));
        c.dataToSend();
        feed(c, Hex.encode(FrameWriter.encode(new Frame.Extension(content ? 0x90 : 0x94, payload), 0)));
        Event.Closed closed = closed(c.events());
        assertNotNull(closed, note);
        assertTrue(closed.error().getMessage().endsWith(cited), note + ": " + closed.error().getMessage());
    }

    private static void feed(Connection c, String hex) {
        byte[] b = Hex.decode(hex);
        c.receiveData(b, 0, b.length);
    }

    private static Event.Closed closed(List<Event> events) {
        for (Event e : events) {
            if (e instanceof Event.Closed closed) {
                return closed;
            }
        }
        return null;
    }

    @Test(timeOut = 5_000)
    public void aStatedTypeGoesRightBeforeItsOnSubscribeAndReachesTheSubscriber() {
        ConnectionTest.Pair p = new ConnectionTest.Pair(Limits.DEFAULT, BOTH, BOTH);
        long id = p.client.subscribe("j", 1);
        p.pump();
        p.server.onSubscribe(id, 0, ContentTypes.JSON);
        byte[] out = p.server.dataToSend();
        assertEquals(Hex.encode(out), "90 11 01 61 70 70 6c 69 63 61 74 69 6f 6e 2f 6a 73 6f 6e 07 01 00");
        p.client.receiveData(out, 0, out.length);
        assertTrue(p.client.events().contains(new Event.OnSubscribed(id, 0, ContentTypes.JSON)));
    }

    @Test(timeOut = 5_000)
    public void withoutTheExtensionOnSubscribeGoesAlone() {
        ConnectionTest.Pair p = new ConnectionTest.Pair(Limits.DEFAULT, Set.of(), BOTH);
        long id = p.client.subscribe("j", 1, null, SubscribeMetadata.of(Map.of("x", "1")));
        p.pump();
        assertTrue(p.serverEvents.contains(new Event.Subscribed(id, "j", 1, SubscribeMetadata.EMPTY)));
        p.server.onSubscribe(id, 0, ContentTypes.JSON);
        assertEquals(Hex.encode(p.server.dataToSend()), "07 01 00");
    }

    @Test(timeOut = 5_000)
    public void metadataGoesRightBeforeItsSubscribeAndReachesThePublisher() {
        ConnectionTest.Pair p = new ConnectionTest.Pair(Limits.DEFAULT, BOTH, BOTH);
        p.pump(); // the hellos: metadata is never optimistic (§18.1)
        long id = p.client.subscribe("news", 1, null, SubscribeMetadata.of(Map.of("x", "1")));
        byte[] out = p.client.dataToSend();
        assertEquals(Hex.encode(out), "94 06 01 01 01 78 01 31 04 04 6e 65 77 73 01 01"); // §18.1's example
        p.server.receiveData(out, 0, out.length);
        List<Event> events = p.server.events();
        Event.Subscribed s = (Event.Subscribed) events.get(0);
        assertEquals(s.metadata().text("x"), "1");
        assertEquals(s.name(), "news");
    }

    /** Not adjacent, doubled, for another id: each a connection error citing the qualifier's section. */
    @Test(timeOut = 5_000)
    public void qualifiersMustBeFollowedByWhatTheyQualify() {
        String hello = Hex.encode(FrameWriter.encode(new Frame.Hello(false, 0, List.of(4L, 5L)), 0));
        String serverHello = Hex.encode(FrameWriter.encode(new Frame.Hello(true, 0, List.of(4L, 5L)), 0));
        String md = "94 04 01 01 01 78 00".substring(0, 2) + " 05 01 01 01 78 00";
        Map<String, String> serverCases = Map.of(
                md + " 05 01 01", "subscribeMetadata (0x94) for subscriber 1 followed by message type 0x05, not by its subscribe (PROTOCOL.md §18.1)",
                md + " " + md, "two subscribeMetadata (0x94) messages before one subscribe (PROTOCOL.md §18.1)",
                md + " 04 01 61 02 01", "subscribeMetadata (0x94) for subscriber 1 followed by message type 0x04 for subscriber 2, not by its "
                        + "subscribe (PROTOCOL.md §18.1)");
        for (Map.Entry<String, String> c : serverCases.entrySet()) {
            Connection server = new Connection(Connection.Side.SERVER, Limits.DEFAULT, BOTH);
            feed(server, hello + " " + c.getKey());
            assertEquals(closed(server.events()).error().getMessage(), c.getValue());
        }
        String ct = "90 05 01 61 2f 62 63";
        Map<String, String> clientCases = Map.of(
                ct + " 0c 01", "contentType (0x90) for subscriber 1 followed by message type 0x0c, not by its onSubscribe (PROTOCOL.md §17.1)",
                ct + " " + ct, "two contentType (0x90) messages before one onSubscribe (PROTOCOL.md §17.1)",
                ct + " 07 02 00", "contentType (0x90) for subscriber 1 followed by message type 0x07 for subscriber 2, not by its "
                        + "onSubscribe (PROTOCOL.md §17.1)");
        for (Map.Entry<String, String> c : clientCases.entrySet()) {
            Connection client = new Connection(Connection.Side.CLIENT, Limits.DEFAULT, BOTH);
            client.subscribe("a", 1);
            feed(client, serverHello + " " + c.getKey());
            assertEquals(closed(client.events()).error().getMessage(), c.getValue());
        }
    }

    @Test(timeOut = 5_000)
    public void notOfferedTheirMessagesAndReservedTypesAreRefused() {
        Connection server = new Connection(Connection.Side.SERVER, Limits.DEFAULT, Set.of());
        feed(server, Hex.encode(FrameWriter.encode(new Frame.Hello(false, 0, List.of(4L, 5L)), 0)) + " 94 02 01 00 04 01 61 01 01");
        assertEquals(closed(server.events()).error().getMessage(),
                "message type 0x94 belongs to extension metadata (id 5), which is not active on this connection (PROTOCOL.md §4.4)");
        for (String type : List.of("91", "93", "95", "97")) {
            Connection c = new Connection(Connection.Side.SERVER, Limits.DEFAULT, BOTH);
            feed(c, Hex.encode(FrameWriter.encode(new Frame.Hello(false, 0, List.of(4L, 5L)), 0)) + " " + type + " 00");
            assertTrue(closed(c.events()).error().getMessage().contains("is reserved by extension"), type);
        }
    }

    @Test(timeOut = 5_000)
    public void aContentTypeWhoseOnSubscribeCrossedOurCancelIsDroppedWithIt() {
        ConnectionTest.Pair p = new ConnectionTest.Pair(Limits.DEFAULT, BOTH, BOTH);
        long id = p.client.subscribe("j", 1);
        p.pump();
        p.client.cancel(id);
        p.server.onSubscribe(id, 0, ContentTypes.TEXT_UTF8);
        p.pump();
        assertTrue(p.clientEvents.stream().noneMatch(e -> e instanceof Event.OnSubscribed || e instanceof Event.Closed), p.clientEvents.toString());
    }

    @Test(timeOut = 5_000)
    public void mediaTypesAndKeysAreCheckedBeforeSending() {
        assertThrows(IllegalArgumentException.class, () -> ContentTypes.check("json"));
        assertThrows(IllegalArgumentException.class, () -> ContentTypes.check("text/plain; charset=\u00e9"));
        assertEquals(ContentTypes.check("image/png"), "image/png");
        assertTrue(ContentTypes.same("Text/Plain ; Charset = UTF-8", ContentTypes.TEXT_UTF8));
        assertFalse(ContentTypes.same("text/plain", ContentTypes.TEXT_UTF8));
        IllegalArgumentException e = expectThrows(IllegalArgumentException.class, () -> SubscribeMetadata.of(Map.of("X", "1")));
        assertTrue(e.getMessage().endsWith("(PROTOCOL.md §18.1)"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> SubscribeMetadata.of(Map.of("x", 1)));
        SubscribeMetadata m = SubscribeMetadata.of(Map.of("traceparent", "00-ab-cd-01"));
        assertEquals(m.traceparent(), "00-ab-cd-01");
        assertFalse(m.toString().contains("00-ab"), "values stay out of toString");
        assertNull(SubscribeMetadata.EMPTY.text("x"));
    }

    /**
     * A subscribe held while the client's authenticate is checked (§15.3) keeps its metadata: the
     * authorizer and the Subscribed event see it once released, and a refusal with a code of the
     * authorizer's own goes out with that code (§18.1, §15.4).
     */
    @Test(timeOut = 5_000)
    public void metadataTravelsWithASubscribeHeldForTheAuthenticate() {
        Map<String, String> asked = new java.util.HashMap<>();
        Connection server = new Connection(Connection.Side.SERVER, Limits.DEFAULT,
                Set.of(FrameType.AUTH, FrameType.METADATA, FrameType.ERROR_CODES), c -> "t".equals(c.token()),
                (Authorizer) (c, name, metadata) -> {
                    asked.put(name, metadata.text("x"));
                    return "2".equals(metadata.text("x")) ? new Authorizer.Refusal("busy", 8) : null;
                });
        server.dataToSend();
        FrameWriter w = new FrameWriter();
        w.write(new Frame.Hello(false, 0, List.of(FrameType.AUTH, FrameType.METADATA, FrameType.ERROR_CODES)), 0);
        w.write(new Frame.Extension(FrameType.SUBSCRIBE_METADATA, SubscribeMetadata.of(Map.of("x", "1")).encode(1)), 0);
        w.write(new Frame.Subscribe("a", 1, 1), 0);
        w.write(new Frame.Extension(FrameType.SUBSCRIBE_METADATA, SubscribeMetadata.of(Map.of("x", "2")).encode(2)), 0);
        w.write(new Frame.Subscribe("b", 2, 1), 0);
        byte[] before = w.take();
        server.receiveData(before, 0, before.length);
        assertTrue(asked.isEmpty(), "held until the authenticate is settled");
        byte[] auth = FrameWriter.encode(AuthFrames.authenticate("t"), 0);
        server.receiveData(auth, 0, auth.length);
        assertEquals(asked, Map.of("a", "1", "b", "2"));
        List<Event> events = server.events();
        Event.Subscribed a = (Event.Subscribed) events.stream().filter(e -> e instanceof Event.Subscribed).findFirst().orElseThrow();
        assertEquals(a.metadata().text("x"), "1");
        assertEquals(events.stream().filter(e -> e instanceof Event.Subscribed).count(), 1);
        String out = Hex.encode(server.dataToSend());
        assertTrue(out.endsWith("98 02 02 08 0d 02 04 62 75 73 79"), out); // errorCode(2, 8), onError(2, "busy")
    }

    @Test(timeOut = 5_000)
    public void metadataAboveTheLimitsIsRefusedCitingSection11WithCode7() {
        byte[] big = new byte[SubscribeMetadata.MAX_BYTES + 1];
        big[0] = 1;
        big[1] = 1;
        ProtocolException e = expectThrows(ProtocolException.class,
                () -> SubscribeMetadata.decode(big, SubscribeMetadata.MAX_BYTES, SubscribeMetadata.MAX_ENTRIES));
        assertTrue(e.getMessage().startsWith("subscribeMetadata of 16385 bytes exceeds max_metadata_bytes=16384"), e.getMessage());
        assertEquals(e.code(), ErrorCode.LIMIT_EXCEEDED);
    }
}
