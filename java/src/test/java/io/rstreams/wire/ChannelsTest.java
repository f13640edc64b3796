package io.rstreams.wire;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNull;
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
import java.util.List;
import java.util.Map;
import org.testng.annotations.DataProvider;
import org.testng.annotations.Test;

/**
 * Extension channels' sans-I/O core (PROTOCOL.md §21): the payloads of docs/protocol-vectors.json
 * read and written byte for byte, the malformed ones refused citing their section, the mark of
 * §21.3, input demand (§21.4), split input elements (§21.6) and the ends of §21.5's table.
 */
public class ChannelsTest {
    private static final List<String> TYPES =
            List.of("channel", "inputRequest", "inputCancel", "inputNext", "inputComplete", "inputError", "inputNextPart");

    @DataProvider(name = "vectors")
    public Object[][] vectors() throws IOException {
        List<Map<String, Object>> vectors = VectorPayloadsTest.vectorsOf(TYPES.toArray(String[]::new));
        assertTrue(vectors.size() >= 7, "the channels vectors, got " + vectors.size());
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
        int type = ((BigInteger) vector.get("code")).intValue();
        long sid = ((BigInteger) fields.get("subscriber")).longValue();
        Channels.Decoded d = Channels.decode(type, payload);
        assertEquals(d.subscriber(), sid, name);
        byte[] again;
        if (fields.containsKey("demand")) {
            assertEquals(d.demand(), ((BigInteger) fields.get("demand")).longValue(), name);
            again = Channels.encodeRequest(sid, d.demand());
        } else if (fields.containsKey("data")) {
            assertEquals(Hex.encode(d.data()), Hex.encode(Hex.decode((String) ((Map<String, Object>) fields.get("data")).get("hex"))), name);
            again = Channels.encode(sid, d.data());
        } else if (fields.containsKey("error")) {
            assertEquals(d.text(), fields.get("error"), name);
            again = Channels.encode(sid, d.text().getBytes(StandardCharsets.UTF_8));
        } else {
            again = Channels.encode(sid);
        }
        assertEquals(Hex.encode(again), Hex.encode(payload), name);
    }

    @DataProvider(name = "invalid")
    @SuppressWarnings("unchecked")
    public Object[][] invalid() throws IOException {
        String text = Files.readString(RepoPaths.root().resolve("docs/protocol-vectors.json"), StandardCharsets.UTF_8);
        List<Map<String, Object>> all = (List<Map<String, Object>>) ((Map<String, Object>) Json.parse(text)).get("invalid_payloads");
        List<Object[]> out = new ArrayList<>();
        for (Map<String, Object> v : all) {
            if (TYPES.contains((String) v.get("type"))) {
                out.add(new Object[] {v.get("type") + " " + v.get("note"), v});
            }
        }
        assertTrue(out.size() >= 3, "the invalid channels payloads, got " + out.size());
        return out.toArray(Object[][]::new);
    }

    @Test(dataProvider = "invalid", timeOut = 10_000)
    public void invalidPayloadsAreRefusedCitingTheirSection(String name, Map<String, Object> vector) {
        int type = ((BigInteger) vector.get("code")).intValue();
        byte[] payload = Hex.decode((String) vector.get("payload"));
        ProtocolException e = expectThrows(ProtocolException.class, () -> Channels.decode(type, payload));
        assertTrue(e.getMessage().endsWith("(PROTOCOL.md §" + vector.get("section") + ")"), name + ": " + e.getMessage());
    }

    @Test(timeOut = 10_000)
    public void malformedAndReservedPayloads() {
        for (byte[] bad : new byte[][] {{}, {(byte) 0x80}, {(byte) 0x81, 0x00}}) {
            ProtocolException e = expectThrows(ProtocolException.class, () -> Channels.decode(FrameType.INPUT_NEXT, bad));
            assertTrue(e.getMessage().endsWith("(PROTOCOL.md §21.2)"), e.getMessage());
        }
        ProtocolException e = expectThrows(ProtocolException.class, () -> Channels.decode(FrameType.INPUT_REQUEST, new byte[] {1, 1, 0}));
        assertEquals(e.getMessage(), "inputRequest has 1 byte(s) after its demand (PROTOCOL.md §21.2)");
        e = expectThrows(ProtocolException.class, () -> Channels.decode(0xA7, new byte[] {1}));
        assertEquals(e.getMessage(), "message type 0xa7 is reserved by extension channels (id 8) (PROTOCOL.md §4.4)");
    }

    @Test(timeOut = 10_000)
    public void aMarkQualifiesOnlyTheNextSubscribeOfItsId() throws Exception {
        Channels c = new Channels(Limits.DEFAULT);
        assertTrue(!c.subscribeReceived(1), "no mark: a plain subscribe");
        assertNull(c.received(FrameType.CHANNEL, Channels.encode(4)));
        assertTrue(c.subscribeReceived(4));
        assertTrue(!c.subscribeReceived(4), "the mark is used up");
        c.markReceived(4);
        ProtocolException e = expectThrows(ProtocolException.class, () -> c.subscribeReceived(5));
        assertEquals(e.getMessage(), "0xa0 for subscriber 4 followed by a Subscribe for subscriber 5 (PROTOCOL.md §21.3)");
        Channels twice = new Channels(Limits.DEFAULT);
        twice.markReceived(1);
        e = expectThrows(ProtocolException.class, () -> twice.markReceived(1));
        assertEquals(e.getMessage(), "two 0xa0 messages before one Subscribe (PROTOCOL.md §21.3)");
    }

    /** The publisher end: elements within the demand it granted, one beyond it a connection error (§21.4). */
    @Test(timeOut = 10_000)
    public void inputElementsUseTheDemandGranted() throws Exception {
        Channels c = new Channels(Limits.DEFAULT);
        c.opened(1);
        assertEquals(Hex.encode(c.request(1, 16)), "01 10"); // the vector's inputRequest payload
        byte[] hi = Channels.encode(1, "hi".getBytes(StandardCharsets.UTF_8));
        for (int i = 0; i < 16; i++) {
            Channels.Input in = c.received(FrameType.INPUT_NEXT, hi);
            assertEquals(new String(((Channels.Input.Element) in).data(), StandardCharsets.UTF_8), "hi");
        }
        ProtocolException e = expectThrows(ProtocolException.class, () -> c.received(FrameType.INPUT_NEXT, hi));
        assertEquals(e.getMessage(), "inputNext for subscriber 1 beyond the input demand of 0 (PROTOCOL.md §21.4)");
    }

    /** §21.6: parts joined, one demand per element, inputComplete amid a split element refused, a joined element over the limit ends that input. */
    @Test(timeOut = 10_000)
    public void splitInputElementsAreJoined() throws Exception {
        Channels c = new Channels(Limits.DEFAULT);
        c.opened(1);
        c.request(1, 1);
        assertNull(c.received(FrameType.INPUT_NEXT_PART, Hex.decode("01 61 62 63")));
        Channels.Input in = c.received(FrameType.INPUT_NEXT, Hex.decode("01 64 65"));
        assertEquals(new String(((Channels.Input.Element) in).data(), StandardCharsets.UTF_8), "abcde");
        ProtocolException beyond = expectThrows(ProtocolException.class, () -> c.received(FrameType.INPUT_NEXT_PART, Hex.decode("01 61")));
        assertTrue(beyond.getMessage().endsWith("(PROTOCOL.md §21.4)"), beyond.getMessage());

        c.request(1, 1);
        assertNull(c.received(FrameType.INPUT_NEXT_PART, Hex.decode("01 61")));
        ProtocolException e = expectThrows(ProtocolException.class, () -> c.received(FrameType.INPUT_COMPLETE, Channels.encode(1)));
        assertEquals(e.getMessage(), "inputComplete for subscriber 1 with an unfinished split input element (PROTOCOL.md §21.6)");

        Channels limited = new Channels(Limits.DEFAULT.withMaxElementSize(8));
        limited.opened(2);
        limited.request(2, 1);
        assertNull(limited.received(FrameType.INPUT_NEXT_PART, Channels.encode(2, new byte[5])));
        assertEquals(limited.received(FrameType.INPUT_NEXT, Channels.encode(2, new byte[5])),
                new Channels.Input.TooLarge(2, "split input element for subscriber 2 grows past max_element_size=8 (PROTOCOL.md §11)"));
        // that input ended (§21.6): what crossed the inputCancel is dropped, demand is not checked for it
        assertNull(limited.received(FrameType.INPUT_NEXT_PART, Channels.encode(2, new byte[5])));
        assertNull(limited.received(FrameType.INPUT_NEXT, Channels.encode(2, new byte[5])));
        assertNull(limited.received(FrameType.INPUT_COMPLETE, Channels.encode(2)));
        assertNull(limited.request(2, 1), "no inputRequest for an ended input");
    }

    /** §21.5's table: after inputComplete, inputError or inputCancel, and for an id with no channel, input messages are dropped quietly. */
    @Test(timeOut = 10_000)
    public void inputMessagesThatCrossedTheEndAreDropped() throws Exception {
        Channels c = new Channels(Limits.DEFAULT);
        assertNull(c.received(FrameType.INPUT_NEXT, Channels.encode(9, new byte[1])), "IDLE: dropped");
        c.opened(1);
        c.request(1, 5);
        Channels.Input end = c.received(FrameType.INPUT_ERROR, Channels.encode(1, "boom".getBytes(StandardCharsets.UTF_8)));
        assertEquals(end, new Channels.Input.Ended(1, "boom"));
        assertNull(c.received(FrameType.INPUT_NEXT, Channels.encode(1, new byte[1])), "ENDED: dropped");
        assertNull(c.request(1, 1), "no inputRequest for an ended input");
        c.opened(3);
        assertEquals(Hex.encode(c.cancelInput(3)), "03");
        assertNull(c.received(FrameType.INPUT_COMPLETE, Channels.encode(3)), "crossed our inputCancel: dropped");
        c.outputEnded(3, true);
        assertNull(c.request(3, 1), "IDLE once the output ended");
    }

    /** The opener end: input demand from inputRequest, one per element sent, inputCancel ends the input. */
    @Test(timeOut = 10_000)
    public void theOpenerSendsWithinTheInputDemand() throws Exception {
        Channels c = new Channels(Limits.DEFAULT);
        assertEquals(Hex.encode(c.opening(1)), "01");
        expectThrows(IllegalStateException.class, () -> c.sendInput(1, new byte[1]));
        assertEquals(c.received(FrameType.INPUT_REQUEST, Channels.encodeRequest(1, 2)), new Channels.Input.Demand(1, 2));
        assertEquals(Hex.encode(c.sendInput(1, "hi".getBytes(StandardCharsets.UTF_8))), "01 68 69");
        assertEquals(c.inputDemand(1), 1);
        IllegalArgumentException tooBig = expectThrows(IllegalArgumentException.class,
                () -> c.sendInput(1, new byte[Limits.DEFAULT.maxStringLength()]));
        assertTrue(tooBig.getMessage().endsWith("PROTOCOL.md §21.2)"), tooBig.getMessage());
        assertEquals(c.received(FrameType.INPUT_CANCEL, Channels.encode(1)), new Channels.Input.Cancelled(1));
        assertEquals(c.inputDemand(1), 0);
        assertNull(c.endInput(1, null), "cancelled: nothing to send");
        c.opening(2);
        assertEquals(Hex.encode(c.endInput(2, "boom")), "02 62 6f 6f 6d");
        c.outputEnded(2, false);
        assertNull(c.received(FrameType.INPUT_REQUEST, Channels.encodeRequest(2, 1)), "IDLE: dropped");
    }
}
