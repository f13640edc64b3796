package io.rstreams.wire;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.testng.annotations.Test;

/**
 * Extension channels (PROTOCOL.md §21) through the sans-I/O connection, a client and a server in
 * memory: a channel opened, its input demanded, sent, ended; the mark's rules; input-parts (§21.6).
 */
public class ChannelConnectionTest {
    private static final Set<Long> CHANNELS = Set.of(FrameType.CHANNELS);

    private static List<Object> kinds(List<Event> events) {
        List<Object> out = new ArrayList<>();
        for (Event e : events) {
            if (e instanceof Event.ChannelInput in) {
                out.add(in.input());
            } else if (!(e instanceof Event.PeerHello)) {
                out.add(e.getClass().getSimpleName());
            }
        }
        return out;
    }

    private static Event.Closed closed(List<Event> events) {
        for (Event e : events) {
            if (e instanceof Event.Closed c) {
                return c;
            }
        }
        return null;
    }

    @Test(timeOut = 5_000)
    public void aChannelsInputFlowsWithinItsDemandAndEndsBeforeItsOutput() {
        ConnectionTest.Pair p = new ConnectionTest.Pair(Limits.DEFAULT, CHANNELS, CHANNELS);
        p.pump();
        long id = p.client.openChannel("upper", 5);
        p.pump();
        assertEquals(kinds(p.serverEvents), List.of("ChannelOpened", "Subscribed"));
        p.serverEvents.clear();
        assertTrue(p.server.onSubscribe(id, 0));
        p.server.requestInput(id, 2);
        p.pump();
        assertEquals(kinds(p.clientEvents), List.of("OnSubscribed", new Channels.Input.Demand(id, 2)));
        p.client.sendInput(id, "a".getBytes(StandardCharsets.UTF_8));
        p.client.sendInput(id, "b".getBytes(StandardCharsets.UTF_8));
        expectThrows(IllegalStateException.class, () -> p.client.sendInput(id, new byte[1]));
        p.client.endInput(id, null);
        p.pump();
        List<Object> got = kinds(p.serverEvents);
        assertEquals(got.size(), 3, got.toString());
        assertEquals(new String(((Channels.Input.Element) got.get(0)).data(), StandardCharsets.UTF_8), "a");
        assertEquals(new String(((Channels.Input.Element) got.get(1)).data(), StandardCharsets.UTF_8), "b");
        assertEquals(got.get(2), new Channels.Input.Ended(id, null));
        assertTrue(p.server.onNext(id, "A".getBytes(StandardCharsets.UTF_8)));
        assertTrue(p.server.onComplete(id));
        p.pump();
        assertTrue(kinds(p.clientEvents).contains("Completed"));
        assertTrue(p.client.openChannel("upper", 0) == id, "the id is free again once the output ended");
    }

    /** The output's end ends the input (§21.5): input that crossed it is dropped quietly; a plain subscribe of the id is no channel. */
    @Test(timeOut = 5_000)
    public void inputThatCrossedTheOutputsEndIsDropped() {
        ConnectionTest.Pair p = new ConnectionTest.Pair(Limits.DEFAULT, CHANNELS, CHANNELS);
        p.pump();
        long id = p.client.openChannel("upper", 1);
        p.pump();
        p.server.onSubscribe(id, 0);
        p.server.requestInput(id, 1);
        p.pump();
        p.server.onComplete(id); // crosses the client's input
        p.client.sendInput(id, new byte[1]);
        p.pump();
        p.serverEvents.clear();
        p.client.sendExtension(FrameType.INPUT_NEXT, Channels.encode(id, new byte[1])); // again, around the client's own state
        p.client.subscribe("plain", 0);
        p.pump();
        assertEquals(kinds(p.serverEvents), List.of("Subscribed"));
        assertEquals(p.server.state(), Connection.State.OPEN);
    }

    @Test(timeOut = 5_000)
    public void aMarkForAnotherIdOrTwoMarksAreConnectionErrors() {
        ConnectionTest.Pair p = new ConnectionTest.Pair(Limits.DEFAULT, CHANNELS, CHANNELS);
        p.pump();
        p.client.sendExtension(FrameType.CHANNEL, Channels.encode(4));
        p.client.subscribe("upper", 0);
        p.pump();
        assertEquals(closed(p.serverEvents).error().getMessage(),
                "0xa0 for subscriber 4 followed by a Subscribe for subscriber 1 (PROTOCOL.md §21.3)");

        ConnectionTest.Pair q = new ConnectionTest.Pair(Limits.DEFAULT, CHANNELS, CHANNELS);
        q.pump();
        q.client.sendExtension(FrameType.CHANNEL, Channels.encode(1));
        q.client.sendExtension(FrameType.CHANNEL, Channels.encode(1));
        q.pump();
        assertEquals(closed(q.serverEvents).error().getMessage(), "two 0xa0 messages before one Subscribe (PROTOCOL.md §21.3)");
    }

    @Test(timeOut = 5_000)
    public void inputNextPartNeedsInputPartsAnd0xA7IsReserved() {
        ConnectionTest.Pair p = new ConnectionTest.Pair(Limits.DEFAULT, CHANNELS, CHANNELS);
        p.pump();
        p.client.sendExtension(FrameType.INPUT_NEXT_PART, Channels.encode(1, new byte[1]));
        p.pump();
        assertTrue(closed(p.serverEvents).error().getMessage().endsWith("(PROTOCOL.md §4.4)"));

        ConnectionTest.Pair q = new ConnectionTest.Pair(Limits.DEFAULT, CHANNELS, CHANNELS);
        q.pump();
        byte[] raw = {(byte) 0xA7, 1, 1};
        q.server.receiveData(raw, 0, raw.length);
        q.serverEvents.addAll(q.server.events());
        assertEquals(closed(q.serverEvents).error().getMessage(), "message type 0xa7 is reserved by extension channels (id 8) (PROTOCOL.md §4.4)");

        Set<Long> both = Set.of(FrameType.CHANNELS, FrameType.INPUT_PARTS);
        ConnectionTest.Pair r = new ConnectionTest.Pair(Limits.DEFAULT, both, both);
        r.pump();
        long id = r.client.openChannel("upper", 0);
        r.pump();
        r.server.requestInput(id, 1);
        r.pump();
        r.serverEvents.clear();
        r.client.sendExtension(FrameType.INPUT_NEXT_PART, Channels.encode(id, "abc".getBytes(StandardCharsets.UTF_8)));
        r.client.sendExtension(FrameType.INPUT_NEXT, Channels.encode(id, "de".getBytes(StandardCharsets.UTF_8)));
        r.pump();
        List<Object> got = kinds(r.serverEvents);
        assertEquals(got.size(), 1, got.toString());
        assertEquals(new String(((Channels.Input.Element) got.get(0)).data(), StandardCharsets.UTF_8), "abcde");
    }

    /** §21.6: the opener splits an element above the part size; the publisher joins it, with one input demand. */
    @Test(timeOut = 5_000)
    public void aLargeInputElementTravelsSplit() {
        Set<Long> both = Set.of(FrameType.CHANNELS, FrameType.INPUT_PARTS);
        ConnectionTest.Pair p = new ConnectionTest.Pair(Limits.DEFAULT.withSplitThreshold(10), both, both);
        p.pump();
        assertEquals(p.client.inputPartSize(), 10);
        long id = p.client.openChannel("upper", 0);
        p.pump();
        p.server.requestInput(id, 2);
        p.pump();
        p.serverEvents.clear();
        byte[] big = new byte[25];
        java.util.Arrays.fill(big, (byte) 'x');
        p.client.sendInput(id, big);
        byte[] wire = p.client.dataToSend();
        // three messages: two inputNextPart of 10 bytes, the inputNext of the last 5 (§21.6)
        assertEquals(wire.length, 3 * 3 + 25);
        assertEquals(wire[0] & 0xff, FrameType.INPUT_NEXT_PART);
        assertEquals(wire[13] & 0xff, FrameType.INPUT_NEXT_PART);
        assertEquals(wire[26] & 0xff, FrameType.INPUT_NEXT);
        p.server.receiveData(wire, 0, wire.length);
        p.serverEvents.addAll(p.server.events());
        List<Object> got = kinds(p.serverEvents);
        assertEquals(got.size(), 1, got.toString());
        assertEquals(((Channels.Input.Element) got.get(0)).data(), big);
        p.client.sendInput(id, new byte[1]); // the second demand: a split element used only one
        expectThrows(IllegalStateException.class, () -> p.client.sendInput(id, new byte[1]));

        ConnectionTest.Pair q = new ConnectionTest.Pair(Limits.DEFAULT.withSplitThreshold(10), CHANNELS, CHANNELS);
        q.pump();
        long plain = q.client.openChannel("upper", 0);
        q.pump();
        q.server.requestInput(plain, 1);
        q.pump();
        q.client.sendInput(plain, big); // without input-parts: one inputNext
        assertEquals(q.client.dataToSend().length, 3 + 25);
    }

    /**
     * §21.6: a joined input element above max_element_size ends that input, not the connection:
     * the publisher sends inputCancel, the parts that crossed it are dropped, the output goes on.
     */
    @Test(timeOut = 5_000)
    public void aSplitInputElementTooLargeEndsOnlyThatInput() {
        Set<Long> both = Set.of(FrameType.CHANNELS, FrameType.INPUT_PARTS);
        ConnectionTest.Pair p = new ConnectionTest.Pair(Limits.DEFAULT.withSplitThreshold(10).withMaxElementSize(40), both, both);
        p.pump();
        long id = p.client.openChannel("upper", 5);
        p.pump();
        assertTrue(p.server.onSubscribe(id, 0));
        p.server.requestInput(id, 3);
        p.pump();
        p.serverEvents.clear();
        p.clientEvents.clear();
        p.client.sendInput(id, new byte[100]); // 10 parts: the fifth passes 40 bytes
        p.pump();
        assertEquals(kinds(p.serverEvents), List.of(new Channels.Input.TooLarge(id,
                "split input element for subscriber " + id + " grows past max_element_size=40 (PROTOCOL.md §11)")));
        assertEquals(kinds(p.clientEvents), List.of(new Channels.Input.Cancelled(id)));
        assertEquals(p.server.state(), Connection.State.OPEN);
        assertEquals(p.client.state(), Connection.State.OPEN);
        expectThrows(IllegalStateException.class, () -> p.client.sendInput(id, new byte[1])); // the input ended at the opener too
        assertTrue(p.server.onNext(id, "still".getBytes(StandardCharsets.UTF_8)));
        assertTrue(p.server.onComplete(id));
        p.pump();
        List<Object> got = kinds(p.clientEvents);
        assertTrue(got.contains("Element") && got.contains("Completed"), got.toString());
    }

    /**
     * §21.6: a partly received split input element counts against max_parts_in_flight and
     * max_reassembly_bytes together with the connection's partly received split output elements;
     * the server here both serves a channel and subscribes to the client's publisher, whose split
     * element comes first or second.
     */
    @Test(timeOut = 5_000)
    public void splitInputCountsWithSplitOutputAgainstTheConnectionsLimits() {
        Limits oneAtATime = new Limits(1000, 64 << 10, 1024, 1024, 1, 100_000, 64, 10);
        String parts = "more than max_parts_in_flight=1 split elements at once (PROTOCOL.md §11)";
        assertEquals(splitInputAndOutput(oneAtATime, 100, 5, true), parts);
        assertEquals(splitInputAndOutput(oneAtATime, 100, 5, false), parts);
        Limits hundredBytes = new Limits(100, 64 << 10, 1024, 1024, 64, 100, 64, 60);
        String bytes = "split elements in flight exceed max_reassembly_bytes=100 (PROTOCOL.md §11)";
        assertEquals(splitInputAndOutput(hundredBytes, 90, 50, true), bytes); // 60 of output + 50 of input
        assertEquals(splitInputAndOutput(hundredBytes, 90, 50, false), bytes);
        assertEquals(splitInputAndOutput(hundredBytes, 90, 40, true), null); // 100 in all: within the bound
    }

    /**
     * The server's goodbye reason (null: still open) after the client sent the first part of an
     * output element of {@code outputSize} bytes and an inputNextPart of {@code inputPart} bytes,
     * the output's first when {@code outputFirst}.
     */
    private static String splitInputAndOutput(Limits limits, int outputSize, int inputPart, boolean outputFirst) {
        Set<Long> both = Set.of(FrameType.CHANNELS, FrameType.INPUT_PARTS);
        ConnectionTest.Pair p = new ConnectionTest.Pair(limits, both, both);
        p.pump();
        long channel = p.client.openChannel("upper", 0);
        long output = p.server.subscribe("pub", 1);
        p.pump();
        assertTrue(p.server.onSubscribe(channel, 0));
        p.server.requestInput(channel, 1);
        assertTrue(p.client.onSubscribe(output, 0));
        p.pump();
        assertTrue(p.client.onNext(output, new byte[outputSize])); // queued: sent a part at a time
        Runnable outputPart = () -> {
            p.client.sendParts(1);
            p.pump();
        };
        Runnable sendInputPart = () -> {
            p.client.sendExtension(FrameType.INPUT_NEXT_PART, Channels.encode(channel, new byte[inputPart]));
            p.pump();
        };
        (outputFirst ? outputPart : sendInputPart).run();
        assertEquals(p.server.state(), Connection.State.OPEN);
        (outputFirst ? sendInputPart : outputPart).run();
        Event.Closed c = closed(p.serverEvents);
        return c == null ? null : c.error().getMessage();
    }

    @Test(timeOut = 5_000)
    public void openingAChannelNeedsTheExtensionActive() {
        ConnectionTest.Pair p = new ConnectionTest.Pair(Limits.DEFAULT, CHANNELS, Set.of());
        p.pump();
        IllegalStateException e = expectThrows(IllegalStateException.class, () -> p.client.openChannel("upper", 0));
        assertEquals(e.getMessage(), "can't open a channel: the peer does not offer extension channels (id 8) (PROTOCOL.md §21.1)");
    }
}
