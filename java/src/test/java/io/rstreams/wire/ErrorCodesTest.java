package io.rstreams.wire;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertNotNull;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.rstreams.testing.Hex;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.testng.annotations.Test;

/**
 * Extension error-codes (PROTOCOL.md §19) in the sans-I/O connection: the payloads, byte for byte
 * as docs/protocol-vectors.json has them; negotiation (codes only when both hellos list id 6); the
 * code §10 gives each refusal and goodbye; the qualifier rules of §19.1 on receipt.
 */
public class ErrorCodesTest {
    private static final Set<Long> CODES = Set.of(FrameType.ERROR_CODES);

    private static Event.Closed closed(List<Event> events) {
        for (Event e : events) {
            if (e instanceof Event.Closed c) {
                return c;
            }
        }
        return null;
    }

    private static Event.Failed failed(List<Event> events) {
        for (Event e : events) {
            if (e instanceof Event.Failed f) {
                return f;
            }
        }
        return null;
    }

    /** A client that subscribed (demand 1) to a peer whose serverHello, given as hex, it has read. */
    private static Connection clientAfter(String serverHello, Set<Long> offered) {
        Connection client = new Connection(Connection.Side.CLIENT, Limits.DEFAULT, offered);
        client.subscribe("x", 1);
        client.dataToSend();
        feed(client, serverHello);
        client.events();
        return client;
    }

    private static void feed(Connection c, String hex) {
        byte[] in = Hex.decode(hex);
        c.receiveData(in, 0, in.length);
    }

    private static String hex(byte[] data) {
        StringBuilder b = new StringBuilder();
        for (byte x : data) {
            b.append(b.length() == 0 ? "" : " ").append(String.format("%02x", x & 0xFF));
        }
        return b.toString();
    }

    // ---- the payloads -------------------------------------------------------------------------

    @Test(timeOut = 10_000)
    public void payloadsMatchTheVectors() throws IOException {
        List<Map<String, Object>> vectors = VectorPayloadsTest.vectorsOf("errorCode", "goodbyeCode");
        assertEquals(vectors.size(), 2, "the errorCode and goodbyeCode vectors");
        for (Map<String, Object> v : vectors) {
            byte[] payload = VectorPayloadsTest.payload(v);
            Map<String, Object> fields = VectorPayloadsTest.fields(v);
            long code = ((Number) fields.get("code")).longValue();
            if ("errorCode".equals(v.get("type"))) {
                long subscriber = ((Number) fields.get("subscriber")).longValue();
                assertEquals(Connection.errorCodePayload(subscriber, code), payload);
                assertEquals(decode(payload, 2, "errorCode"), new long[] {subscriber, code});
            } else {
                assertEquals(Connection.goodbyeCodePayload(code), payload);
                assertEquals(decode(payload, 1, "goodbyeCode"), new long[] {code});
            }
            assertEquals(hex(FrameWriter.encode(new Frame.Extension(((Number) v.get("code")).intValue(), payload), 0)),
                    ((String) v.get("hex")).toLowerCase());
        }
    }

    private static long[] decode(byte[] payload, int count, String what) {
        try {
            return Connection.qualifierFields(payload, count, what);
        } catch (ProtocolException e) {
            throw new AssertionError(e);
        }
    }

    @Test(timeOut = 10_000)
    public void malformedPayloadsCiteSection191() {
        String[][] bad = {
            {"01", "2"}, // errorCode: a subscriber and no code (the vectors' invalid payload)
            {"0b 00", "1"}, // goodbyeCode: a byte after the code (likewise)
            {"", "1"},
            {"80", "1"}, // truncated varint
            {"80 00", "1"}, // non-minimal varint
            {"ff ff ff ff ff ff ff ff ff ff 01", "1"}, // over-long varint
            {"01 02 03", "2"},
        };
        for (String[] b : bad) {
            ProtocolException e = expectThrows(ProtocolException.class,
                    () -> Connection.qualifierFields(Hex.decode(b[0]), Integer.parseInt(b[1]), "errorCode"));
            assertTrue(e.getMessage().contains("§19.1"), b[0] + ": " + e.getMessage());
            assertEquals(e.code(), ErrorCode.PROTOCOL_VIOLATION);
        }
        long max = -1L; // 2**64 - 1, the largest code a varint holds
        assertEquals(decode(Connection.goodbyeCodePayload(max), 1, "goodbyeCode"), new long[] {max});
    }

    @Test(timeOut = 5_000)
    public void registryNumbersAreTheDocuments() {
        assertEquals(ErrorCode.NORMAL.value(), 0);
        assertEquals(ErrorCode.UNKNOWN_PUBLISHER.value(), 2);
        assertEquals(ErrorCode.TIMEOUT.value(), 11);
        for (ErrorCode c : ErrorCode.values()) {
            assertEquals(ErrorCode.of(c.value()), c);
        }
        assertNull(ErrorCode.of(12));
        assertNull(ErrorCode.of(1024));
        assertNull(ErrorCode.of(-1));
    }

    // ---- negotiation --------------------------------------------------------------------------

    @Test(timeOut = 5_000)
    public void bothOfferingItTheOnErrorCarriesItsCode() {
        ConnectionTest.Pair p = new ConnectionTest.Pair(Limits.DEFAULT, CODES, CODES);
        long id = p.client.subscribe("nope", 1);
        p.pump();
        assertTrue(p.server.activeExtensions().contains(FrameType.ERROR_CODES));
        p.server.onError(id, "no publisher named 'nope'", ErrorCode.UNKNOWN_PUBLISHER.value());
        byte[] out = p.server.dataToSend();
        assertTrue(hex(out).startsWith("98 02 01 02 0d 01"), hex(out)); // adjacent, errorCode first (§19.1)
        p.client.receiveData(out, 0, out.length);
        Event.Failed f = failed(p.client.events());
        assertEquals(f.error(), "no publisher named 'nope'");
        assertEquals(f.code(), Long.valueOf(2));
    }

    @Test(timeOut = 5_000)
    public void aPeerThatDoesNotOfferItGetsNoQualifiers() {
        for (boolean clientOffers : new boolean[] {false, true}) {
            ConnectionTest.Pair p = new ConnectionTest.Pair(Limits.DEFAULT, clientOffers ? CODES : Set.of(), clientOffers ? Set.of() : CODES);
            long id = p.client.subscribe("nope", 1);
            p.pump();
            assertFalse(p.server.activeExtensions().contains(FrameType.ERROR_CODES));
            p.server.onError(id, "no publisher named 'nope'", ErrorCode.UNKNOWN_PUBLISHER.value());
            p.server.goodbye("done", ErrorCode.NORMAL);
            byte[] out = p.server.dataToSend();
            assertEquals(out[0], FrameType.ON_ERROR, hex(out)); // no errorCode, no goodbyeCode
            p.client.receiveData(out, 0, out.length);
            List<Event> events = p.client.events();
            assertNull(failed(events).code());
            assertNull(closed(events).code());
            assertFalse(hex(out).contains("98") || hex(out).contains("99"), hex(out));
        }
    }

    @Test(timeOut = 5_000)
    public void aQualifierFromAPeerThatDidNotNegotiateItIsSection44() {
        Connection client = clientAfter("02 00 00", CODES); // the server lists nothing
        feed(client, "98 02 01 02 0d 01 01 78");
        Event.Closed c = closed(client.events());
        assertTrue(c.error().getMessage().contains("error-codes (id 6), which is not active"), c.error().getMessage());
        assertNull(c.code(), "no code: the peer does not know the extension");
        assertEquals(client.dataToSend()[0], FrameType.GOODBYE);
    }

    @Test(timeOut = 5_000)
    public void noCodeBeforeThePeersHello() {
        Connection server = new Connection(Connection.Side.SERVER, Limits.DEFAULT, CODES);
        server.dataToSend();
        feed(server, "99 01 00");
        Event.Closed c = closed(server.events());
        assertTrue(c.error().getMessage().contains("§4.1"), c.error().getMessage());
        assertNull(c.code());
        assertEquals(server.dataToSend()[0], FrameType.GOODBYE); // a goodbye, no goodbyeCode before it
    }

    // ---- the codes of what this end sends (§10) -------------------------------------------------

    @Test(timeOut = 5_000)
    public void refusalsCarryTheirCodes() {
        Limits limits = Limits.DEFAULT;
        ConnectionTest.Pair p = new ConnectionTest.Pair(limits, CODES, CODES);
        p.pump();
        Connection server = p.server;
        // a subscribe with initialDemand >= 2**63: 5; a name above max_name_length: 7; a request(0): 5
        feed(server, "04 01 61 01 ff ff ff ff ff ff ff ff ff 01");
        assertEquals(hex(server.dataToSend()).substring(0, 11), "98 02 01 05");
        String longName = "x".repeat(limits.maxNameLength() + 1);
        byte[] subscribe = FrameWriter.encode(new Frame.Subscribe(longName, 2, 1), 0);
        server.receiveData(subscribe, 0, subscribe.length);
        assertEquals(hex(server.dataToSend()).substring(0, 11), "98 02 02 07");
        feed(server, "04 01 61 03 00 05 03 00");
        server.events();
        assertEquals(hex(server.dataToSend()).substring(0, 11), "98 02 03 05");
    }

    @Test(timeOut = 5_000)
    public void violationsGoodbyeWithCode6AndLimitsWith7() {
        Connection client = clientAfter("02 00 01 06", CODES);
        feed(client, "07 01 00 08 01 01 61 08 01 01 62"); // two elements on a demand of 1 (§6.3)
        Event.Closed c = closed(client.events());
        assertEquals(c.code(), Long.valueOf(6));
        assertTrue(hex(client.dataToSend()).startsWith("99 01 06 03"));

        client = clientAfter("02 00 01 06", CODES);
        feed(client, "0d 01 ff ff 07"); // an onError text above max_string_length (§11)
        c = closed(client.events());
        assertEquals(c.code(), Long.valueOf(7), c.toString());
        assertTrue(hex(client.dataToSend()).startsWith("99 01 07 03"));
    }

    @Test(timeOut = 5_000)
    public void goodbyeAndAbortCarryTheGivenCode() {
        ConnectionTest.Pair p = new ConnectionTest.Pair(Limits.DEFAULT, CODES, CODES);
        p.pump();
        p.client.goodbye("bye", ErrorCode.NORMAL);
        assertEquals(hex(p.client.dataToSend()), "99 01 00 03 03 62 79 65");
        p.server.abort("idle timeout: nothing received for 1 s (PROTOCOL.md §14.2)", ErrorCode.TIMEOUT);
        byte[] out = p.server.dataToSend();
        assertTrue(hex(out).startsWith("99 01 0b 03"), hex(out));
        assertEquals(closed(p.server.events()).code(), Long.valueOf(11));
        p.client.receiveData(out, 0, out.length); // read while CLOSING: the answer's goodbyeCode is kept (§19.1)
        Event.Closed atClient = closed(p.client.events());
        assertEquals(atClient.code(), Long.valueOf(11));
    }

    @Test(timeOut = 5_000)
    public void theAnswerToAGoodbyeHasNoCodeAndTheGoodbyesCodeReachesTheEvent() {
        ConnectionTest.Pair p = new ConnectionTest.Pair(Limits.DEFAULT, CODES, CODES);
        p.pump();
        p.client.goodbye("bye", ErrorCode.NORMAL);
        byte[] out = p.client.dataToSend();
        p.server.receiveData(out, 0, out.length);
        Event.Closed atServer = closed(p.server.events());
        assertEquals(atServer.reason(), "bye");
        assertEquals(atServer.code(), Long.valueOf(0));
        assertEquals(p.server.dataToSend()[0], FrameType.GOODBYE);
    }

    @Test(timeOut = 5_000)
    public void anOnErrorQueuedBehindASplitElementKeepsItsCode() {
        Limits limits = Limits.DEFAULT;
        ConnectionTest.Pair p = new ConnectionTest.Pair(limits, CODES, CODES);
        long id = p.client.subscribe("big", 1);
        p.pump();
        p.server.onSubscribe(id, 0);
        p.server.onNext(id, new byte[limits.splitThreshold() * 2 + 1]);
        p.server.onError(id, "gone", ErrorCode.UNAVAILABLE.value());
        while (p.server.hasQueuedParts()) {
            p.server.sendParts(Long.MAX_VALUE);
        }
        p.pump();
        Event.Failed f = failed(p.clientEvents);
        assertNotNull(f, p.clientEvents.toString());
        assertEquals(f.code(), Long.valueOf(8));
    }

    // ---- the rules of §19.1 on receipt --------------------------------------------------------

    @Test(timeOut = 5_000)
    public void qualifiersOutOfPlaceAreConnectionErrorsCitingSection191() {
        String[] cases = {
            "98 02 01 02 0d 02 01 78", // errorCode for 1, onError for 2
            "98 02 01 02 98 02 01 02 0d 01 01 78", // a second errorCode
            "99 01 06 98 02 01 02", // goodbyeCode, then an errorCode
            "99 01 06 0c 01", // goodbyeCode, then onComplete
            "98 02 01 02 0c 01", // errorCode, then onComplete
            "98 02 01 02 80 08 00 00 00 00 00 00 00 00", // a ping between: nothing may come between (§19.1)
            "98 01 01", // malformed
        };
        for (String in : cases) {
            Connection client = clientAfter("02 00 02 06 01", Set.of(FrameType.ERROR_CODES, FrameType.KEEPALIVE));
            feed(client, "07 01 00");
            feed(client, in);
            Event.Closed c = closed(client.events());
            assertNotNull(c, in);
            assertTrue(c.error().getMessage().contains("§19.1"), in + ": " + c.error().getMessage());
            assertEquals(c.code(), Long.valueOf(6), in);
        }
    }

    @Test(timeOut = 5_000)
    public void reservedTypesOfTheExtensionAreSection44() {
        for (String in : new String[] {"9a 00", "9b 00"}) {
            Connection client = clientAfter("02 00 01 06", CODES);
            feed(client, in);
            Event.Closed c = closed(client.events());
            assertTrue(c.error().getMessage().contains("is reserved by extension error-codes (id 6)"), c.error().getMessage());
        }
    }

    @Test(timeOut = 5_000)
    public void anErrorCodeForACancelledStreamIsDroppedWithItsOnError() {
        Connection client = clientAfter("02 00 01 06", CODES);
        feed(client, "07 01 00");
        client.cancel(1);
        client.events();
        feed(client, "98 02 01 02 0d 01 01 78"); // the onError crossed the cancel (§5.4)
        List<Event> events = client.events();
        assertNull(closed(events), events.toString());
        assertNull(failed(events), events.toString());
        assertEquals(client.state(), Connection.State.OPEN);
    }

    @Test(timeOut = 5_000)
    public void aQualifiedOnErrorFedOneByteAtATimeKeepsItsCode() {
        Connection client = clientAfter("02 00 01 06", CODES);
        feed(client, "07 01 00");
        for (String b : "98 02 01 02 0d 01 01 78".split(" ")) {
            feed(client, b);
        }
        Event.Failed f = failed(client.events());
        assertEquals(f.error(), "x");
        assertEquals(f.code(), Long.valueOf(2));
    }

    @Test(timeOut = 60_000)
    public void randomQualifiersEndInAGoodbyeOrKeepGoing() {
        java.util.Random r = new java.util.Random(19);
        int violations = 0;
        for (int round = 0; round < 5_000; round++) {
            Connection client = clientAfter("02 00 01 06", CODES);
            feed(client, "07 01 00");
            byte[] junk = new byte[1 + r.nextInt(24)];
            r.nextBytes(junk);
            junk[0] = (byte) (0x98 + r.nextInt(4));
            if (junk.length > 1) {
                junk[1] = (byte) r.nextInt(4); // a short payload, so the next message gets read
            }
            client.receiveData(junk, 0, junk.length);
            client.receiveEof();
            List<Event> events = client.events();
            Event.Closed c = closed(events);
            assertNotNull(c, "round " + round + ": " + events);
            assertEquals(client.state(), Connection.State.CLOSED);
            if (c.error() != null && c.error().getMessage().contains("§19.1")) {
                violations++;
                assertEquals(c.code(), Long.valueOf(6), c.toString());
                assertTrue(hex(client.dataToSend()).startsWith("99 01 06 03"), c.toString());
            }
        }
        assertTrue(violations > 500, "the random inputs exercised §19.1: " + violations);
    }

    @Test(timeOut = 5_000)
    public void aPrivateCodeIsKeptAsItsNumber() {
        Connection client = clientAfter("02 00 01 06", CODES);
        feed(client, "07 01 00");
        byte[] q = FrameWriter.encode(new Frame.Extension(FrameType.ERROR_CODE, Connection.errorCodePayload(1, 5000)), 0);
        client.receiveData(q, 0, q.length);
        feed(client, "0d 01 01 78");
        Event.Failed f = failed(client.events());
        assertEquals(f.code(), Long.valueOf(5000));
        assertNull(ErrorCode.of(f.code()));
    }
}
