package io.rstreams.wire;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNotNull;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.rstreams.testing.Hex;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.testng.annotations.DataProvider;
import org.testng.annotations.Test;

/**
 * Extension messages on the sans-I/O connection (PROTOCOL.md §20): the payloads of
 * docs/protocol-vectors.json read and written byte for byte, the malformed ones refused citing
 * their section, and the credit of §20.3 between a client and a server in memory.
 */
public class MessagesTest {
    private static final Set<Long> MESSAGES = Set.of(FrameType.MESSAGES);

    @DataProvider(name = "vectors")
    public Object[][] vectors() throws IOException {
        List<Map<String, Object>> vectors = VectorPayloadsTest.vectorsOf("message", "messageCredit");
        assertEquals(vectors.size(), 2, "the message and messageCredit vectors");
        Object[][] out = new Object[vectors.size()][];
        for (int k = 0; k < out.length; k++) {
            out[k] = new Object[] {vectors.get(k).get("type") + " " + vectors.get(k).get("note"), vectors.get(k)};
        }
        return out;
    }

    @SuppressWarnings("unchecked")
    @Test(dataProvider = "vectors", timeOut = 10_000)
    public void payloadsReadAndWriteAsTheVectorSays(String name, Map<String, Object> vector) throws Exception {
        byte[] payload = VectorPayloadsTest.payload(vector);
        Map<String, Object> fields = VectorPayloadsTest.fields(vector);
        if ("message".equals(vector.get("type"))) {
            Messages.Decoded got = Messages.decodeMessage(payload);
            byte[] body = Hex.decode((String) ((Map<String, Object>) fields.get("body")).get("hex"));
            assertEquals(got.name(), fields.get("name"), name);
            assertEquals(got.body(), body, name);
            assertEquals(Hex.encode(Messages.encodeMessage(got.name(), body)), Hex.encode(payload), name);
        } else {
            long count = ((BigInteger) fields.get("count")).longValue();
            assertEquals(Messages.decodeCredit(payload), count, name);
            assertEquals(Hex.encode(Messages.encodeCredit(count)), Hex.encode(payload), name);
        }
    }

    @DataProvider(name = "invalid")
    @SuppressWarnings("unchecked")
    public Object[][] invalid() throws IOException {
        String text = java.nio.file.Files.readString(io.rstreams.testing.RepoPaths.root().resolve("docs/protocol-vectors.json"),
                StandardCharsets.UTF_8);
        List<Map<String, Object>> all = (List<Map<String, Object>>) ((Map<String, Object>) io.rstreams.testing.Json.parse(text))
                .get("invalid_payloads");
        List<Object[]> out = new ArrayList<>();
        for (Map<String, Object> v : all) {
            if ("message".equals(v.get("type")) || "messageCredit".equals(v.get("type"))) {
                out.add(new Object[] {v.get("type") + " " + v.get("note"), v});
            }
        }
        assertTrue(out.size() >= 5, "the invalid message payloads, got " + out.size());
        return out.toArray(Object[][]::new);
    }

    /** Each invalid payload, sent by a client within its credit, ends the connection with a goodbye citing the vector's section. */
    @Test(dataProvider = "invalid", timeOut = 10_000)
    public void invalidPayloadsAreConnectionErrors(String name, Map<String, Object> vector) throws Exception {
        byte[] payload = Hex.decode((String) vector.get("payload"));
        int type = ((BigInteger) vector.get("code")).intValue();
        String cited = "(PROTOCOL.md §" + vector.get("section") + ")";
        ProtocolException e = expectThrows(ProtocolException.class,
                () -> {
                    if (type == FrameType.MESSAGE) {
                        Messages.decodeMessage(payload);
                    } else {
                        Messages.decodeCredit(payload);
                    }
                });
        assertTrue(e.getMessage().endsWith(cited), name + ": " + e.getMessage());

        ConnectionTest.Pair p = new ConnectionTest.Pair(Limits.DEFAULT, MESSAGES, MESSAGES);
        p.pump();
        p.client.sendExtension(type, payload);
        p.pump();
        Event.Closed closed = closedOf(p.serverEvents);
        assertNotNull(closed, name + ": the server did not end the connection");
        assertTrue(closed.error().getMessage().endsWith(cited), name + ": " + closed.error().getMessage());
        assertEquals(closed.code(), null, name + ": no error-codes offered here");
    }

    private static Event.Closed closedOf(List<Event> events) {
        for (Event e : events) {
            if (e instanceof Event.Closed c) {
                return c;
            }
        }
        return null;
    }

    private static List<Event.Message> messagesOf(List<Event> events) {
        List<Event.Message> out = new ArrayList<>();
        for (Event e : events) {
            if (e instanceof Event.Message m) {
                out.add(m);
            }
        }
        return out;
    }

    @Test(timeOut = 5_000)
    public void eachEndGrantsItsWindowAtTheHelloAndMessagesArrive() {
        ConnectionTest.Pair p = new ConnectionTest.Pair(Limits.DEFAULT, MESSAGES, MESSAGES);
        p.server.messages().window(3);
        p.pump();
        assertEquals(p.client.messages().credit(), 3);
        assertEquals(p.server.messages().credit(), Messages.DEFAULT_WINDOW);
        assertTrue(p.clientEvents.contains(new Event.MessageCredit(3)));
        p.client.messages().send("events/click?x=1", "hi".getBytes(StandardCharsets.UTF_8));
        p.server.messages().send("notify", new byte[0]);
        p.pump();
        List<Event.Message> got = messagesOf(p.serverEvents);
        assertEquals(got.size(), 1);
        assertEquals(got.get(0).name(), "events/click?x=1");
        assertEquals(new String(got.get(0).body(), StandardCharsets.UTF_8), "hi");
        assertEquals(messagesOf(p.clientEvents).get(0).name(), "notify");
        assertEquals(p.client.messages().credit(), 2);
    }

    @Test(timeOut = 5_000)
    public void withoutCreditASendIsRefusedLocallyAndFreedCreditComesBackInOneGrant() {
        ConnectionTest.Pair p = new ConnectionTest.Pair(Limits.DEFAULT, MESSAGES, MESSAGES);
        p.server.messages().window(2);
        p.pump();
        p.client.messages().send("a", new byte[0]);
        p.client.messages().send("b", new byte[0]);
        IllegalStateException e = expectThrows(IllegalStateException.class, () -> p.client.messages().send("c", new byte[0]));
        assertTrue(e.getMessage().contains("(PROTOCOL.md §20.3)"), e.getMessage());
        p.pump();
        assertEquals(messagesOf(p.serverEvents).size(), 2);
        p.server.messages().handled(1);
        p.server.messages().handled(1);
        p.server.messages().grantFreed();
        p.server.messages().grantFreed(); // nothing freed since: no second messageCredit
        byte[] grant = p.server.dataToSend();
        assertEquals(Hex.encode(grant), "9d 01 02");
        p.client.receiveData(grant, 0, grant.length);
        assertTrue(p.client.events().contains(new Event.MessageCredit(2)));
        assertEquals(p.client.messages().credit(), 2);
    }

    @Test(timeOut = 5_000)
    public void aMessageBeyondTheCreditIsAConnectionErrorCitingSection20_3() {
        ConnectionTest.Pair p = new ConnectionTest.Pair(Limits.DEFAULT, MESSAGES, MESSAGES);
        p.server.messages().window(1);
        p.pump();
        byte[] payload = Messages.encodeMessage("a", new byte[0]);
        p.client.sendExtension(FrameType.MESSAGE, payload); // around the client's own check
        p.client.sendExtension(FrameType.MESSAGE, payload);
        p.pump();
        Event.Closed closed = closedOf(p.serverEvents);
        assertNotNull(closed);
        assertEquals(closed.error().getMessage(),
                "message beyond the granted message credit (1 in flight at most) (PROTOCOL.md §20.3)");
        assertEquals(messagesOf(p.serverEvents).size(), 1);
    }

    @Test(timeOut = 5_000)
    public void aPeerWithoutTheExtensionGetsNoCreditAndASendIsRefusedCitingSection20_1() {
        ConnectionTest.Pair p = new ConnectionTest.Pair(Limits.DEFAULT, MESSAGES, Set.of());
        p.pump();
        assertTrue(!p.client.messages().active());
        IllegalStateException e = expectThrows(IllegalStateException.class, () -> p.client.messages().send("a", new byte[0]));
        assertTrue(e.getMessage().contains("the peer does not offer extension messages (id 7) (PROTOCOL.md §20.1)"), e.getMessage());
        assertTrue(p.clientEvents.stream().noneMatch(ev -> ev instanceof Event.MessageCredit));
    }

    @Test(timeOut = 5_000)
    public void reservedTypesAreConnectionErrorsCitingSection4_4() {
        for (int type : new int[] {0x9E, 0x9F}) {
            ConnectionTest.Pair p = new ConnectionTest.Pair(Limits.DEFAULT, MESSAGES, MESSAGES);
            p.pump();
            byte[] raw = {(byte) type, 0};
            p.server.receiveData(raw, 0, raw.length);
            p.serverEvents.addAll(p.server.events());
            assertEquals(closedOf(p.serverEvents).error().getMessage(),
                    String.format("message type 0x%02x is reserved by extension messages (id 7) (PROTOCOL.md §4.4)", type));
        }
    }

    @Test(timeOut = 5_000)
    public void aMessageTooLargeForMaxStringLengthIsRefusedLocally() {
        ConnectionTest.Pair p = new ConnectionTest.Pair(Limits.DEFAULT, MESSAGES, MESSAGES);
        p.pump();
        IllegalArgumentException e = expectThrows(IllegalArgumentException.class,
                () -> p.client.messages().send("a", new byte[Limits.DEFAULT.maxStringLength()]));
        assertTrue(e.getMessage().endsWith("(PROTOCOL.md §20.2)"), e.getMessage());
        assertEquals(p.client.messages().credit(), Messages.DEFAULT_WINDOW);
    }

    /** A server checking credentials holds messages, with their credit, until the authenticate is settled, then authorizes each (§20.4). */
    @Test(timeOut = 5_000)
    public void messagesWaitForTheAuthenticateThenAreAuthorizedByName() {
        Set<Long> ext = Set.of(FrameType.AUTH, FrameType.MESSAGES);
        Connection client = new Connection(Connection.Side.CLIENT, Limits.DEFAULT, ext);
        Connection server = new Connection(Connection.Side.SERVER, Limits.DEFAULT, ext, c -> "t".equals(c.token()),
                (c, name) -> name.startsWith("ok/"));
        byte[] hello = client.dataToSend();
        server.receiveData(hello, 0, hello.length);
        byte[] answer = server.dataToSend(); // serverHello, messageCredit
        client.receiveData(answer, 0, answer.length);
        client.messages().send("ok/1", new byte[0]);
        client.messages().send("no/2", new byte[0]);
        byte[] out = client.dataToSend();
        server.receiveData(out, 0, out.length);
        assertTrue(messagesOf(server.events()).isEmpty(), "held until the authenticate");
        client.sendExtension(FrameType.AUTHENTICATE, Credentials.token("t").encode());
        out = client.dataToSend();
        server.receiveData(out, 0, out.length);
        List<Event.Message> got = messagesOf(server.events());
        assertEquals(got.size(), 2);
        assertEquals(got.get(0).name(), "ok/1");
        assertEquals(got.get(0).refusal(), null);
        assertEquals(got.get(1).name(), "no/2");
        assertEquals(got.get(1).refusal(), "unauthorized");
        client.messages().send("no/3", new byte[0]); // after the authenticate: authorized as it arrives
        out = client.dataToSend();
        server.receiveData(out, 0, out.length);
        got = messagesOf(server.events());
        assertEquals(got.size(), 1);
        assertEquals(got.get(0).refusal(), "unauthorized");
    }
}
