package io.rstreams.wire;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNotNull;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertThrows;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.rstreams.testing.Hex;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import org.testng.annotations.Test;

/** The sans-I/O connection, driven without a network: a client and a server joined in memory. */
public class ConnectionTest {

    /** A client and a server whose output is handed to each other on {@link #pump}. */
    static final class Pair {
        final Connection client;
        final Connection server;
        final List<Event> clientEvents = new ArrayList<>();
        final List<Event> serverEvents = new ArrayList<>();

        Pair(Limits limits, Set<Long> clientExt, Set<Long> serverExt) {
            client = new Connection(Connection.Side.CLIENT, limits, clientExt);
            server = new Connection(Connection.Side.SERVER, limits, serverExt);
        }

        Pair() {
            this(Limits.DEFAULT, Set.of(), Set.of());
        }

        void pump() {
            for (int round = 0; round < 100; round++) {
                byte[] c = client.dataToSend();
                byte[] s = server.dataToSend();
                if (c.length == 0 && s.length == 0) {
                    return;
                }
                server.receiveData(c, 0, c.length);
                client.receiveData(s, 0, s.length);
                clientEvents.addAll(client.events());
                serverEvents.addAll(server.events());
            }
            throw new AssertionError("the pair never went quiet");
        }
    }

    private static Event.Closed closed(Connection c, List<Event> events) {
        events.addAll(c.events());
        for (Event e : events) {
            if (e instanceof Event.Closed closed) {
                return closed;
            }
        }
        return null;
    }

    @Test(timeOut = 5_000)
    public void helloSubscribeElementsCompleteAcrossThePair() {
        Pair p = new Pair(Limits.DEFAULT, Set.of(1L, 2L), Set.of(1L));
        long id = p.client.subscribe("ticks", 2);
        p.pump();
        assertEquals(p.client.activeExtensions(), Set.of(1L));
        assertTrue(p.serverEvents.contains(new Event.Subscribed(id, "ticks", 2)));
        assertEquals(p.server.credit(id), 2);
        assertTrue(p.server.onSubscribe(id, 0));
        assertTrue(p.server.onNext(id, new byte[] {'a'}));
        assertTrue(p.server.onNext(id, new byte[] {'b'}));
        assertThrows(IllegalStateException.class, () -> p.server.onNext(id, new byte[] {'c'}));
        assertTrue(p.server.onComplete(id));
        p.pump();
        List<Object> kinds = new ArrayList<>();
        for (Event e : p.clientEvents) {
            kinds.add(e instanceof Event.Element el ? new String(el.data()) : e.getClass().getSimpleName());
        }
        assertEquals(kinds, List.of("PeerHello", "OnSubscribed", "a", "b", "Completed"));
    }

    @Test(timeOut = 5_000)
    public void elementBeyondDemandIsAConnectionErrorCitingSection63() {
        Connection client = new Connection(Connection.Side.CLIENT, Limits.DEFAULT, Set.of());
        long id = client.subscribe("x", 1);
        client.dataToSend();
        byte[] in = Hex.decode("02 00 00 07 01 00 08 01 01 61 08 01 01 62");
        client.receiveData(in, 0, in.length);
        Event.Closed c = closed(client, new ArrayList<>());
        assertNotNull(c);
        assertTrue(c.error().getMessage().contains("§6.3"), c.error().getMessage());
        assertEquals(client.state(), Connection.State.CLOSED);
        byte[] out = client.dataToSend();
        assertEquals(out[0], FrameType.GOODBYE);
        assertEquals(id, 1);
    }

    @Test(timeOut = 5_000)
    public void firstFrameMustBeTheHello() {
        Connection server = new Connection(Connection.Side.SERVER, Limits.DEFAULT, Set.of());
        byte[] in = Hex.decode("05 01 01");
        server.receiveData(in, 0, in.length);
        Event.Closed c = closed(server, new ArrayList<>());
        assertTrue(c.error().getMessage().contains("§4.1"), c.error().getMessage());
    }

    @Test(timeOut = 5_000)
    public void helloWithAnotherVersionAndTooManyExtensionsGetsTheGoodbyeNamingTheVersion() {
        byte[] in = new byte[3 + 65]; // version 1, 65 extension ids: one over max_extensions=64
        in[1] = 1;
        in[2] = 65;
        for (int i = 0; i < 65; i++) {
            in[3 + i] = (byte) (i + 1);
        }
        for (Connection.Side side : Connection.Side.values()) {
            Connection c = new Connection(side, Limits.DEFAULT, Set.of());
            c.dataToSend();
            in[0] = (byte) (side == Connection.Side.SERVER ? FrameType.CLIENT_HELLO : FrameType.SERVER_HELLO);
            c.receiveData(in, 0, in.length);
            Event.Closed closed = closed(c, new ArrayList<>());
            String reason = closed.error().getMessage();
            assertTrue(reason.contains("unsupported protocol version 1") && reason.contains("§4.2"), side + ": " + reason);
            byte[] out = c.dataToSend();
            assertEquals(out[0], FrameType.GOODBYE);
            assertTrue(new String(out, java.nio.charset.StandardCharsets.UTF_8).contains("§4.2"), side + ": goodbye");
        }
    }

    @Test(timeOut = 5_000)
    public void cancelIsAcknowledgedAndInFlightElementsAreDropped() {
        Pair p = new Pair();
        long id = p.client.subscribe("x", 5);
        p.pump();
        p.server.onSubscribe(id, 0);
        p.server.onNext(id, new byte[] {1});
        p.client.cancel(id); // crosses the onNext in flight
        p.pump();
        assertTrue(p.serverEvents.contains(new Event.Cancelled(id, null)));
        assertTrue(p.clientEvents.stream().noneMatch(e -> e instanceof Event.Element || e instanceof Event.Completed));
        assertEquals(p.client.state(), Connection.State.OPEN);
        assertEquals(p.client.subscribe("y", 0), id, "the id is free again after the acknowledgement (§5.3)");
    }

    @Test(timeOut = 5_000)
    public void invalidRequestEndsOnlyThatSubscription() {
        Connection server = new Connection(Connection.Side.SERVER, Limits.DEFAULT, Set.of());
        byte[] in = Hex.decode("01 00 00 04 01 61 01 00 05 01 00");
        server.receiveData(in, 0, in.length);
        List<Event> events = server.events();
        assertTrue(events.contains(new Event.Subscribed(1, "a", 0)));
        assertTrue(events.get(events.size() - 1) instanceof Event.Cancelled c && c.reason().contains("rule 3.9"));
        assertEquals(server.state(), Connection.State.OPEN);
    }

    @Test(timeOut = 5_000)
    public void aLocalRequestOfZeroIsRefusedWithRule39sText() {
        Pair p = new Pair();
        long id = p.client.subscribe("a", 0);
        IllegalArgumentException e = expectThrows(IllegalArgumentException.class, () -> p.client.request(id, 0));
        assertEquals(e.getMessage(), "rule 3.9: request(n) needs an int n > 0 (non-positive subscription request), got 0");
    }

    @Test(timeOut = 5_000)
    public void largeElementsAreSplitRoundRobinAndJoined() {
        Pair p = new Pair(Limits.DEFAULT.withSplitThreshold(4), Set.of(), Set.of());
        long a = p.client.subscribe("a", 10);
        long b = p.client.subscribe("b", 10);
        p.pump();
        p.server.onSubscribe(a, 0);
        p.server.onSubscribe(b, 0);
        p.server.onNext(a, "0123456789".getBytes());
        p.server.onNext(b, "abcdefgh".getBytes());
        p.server.onNext(a, "xy".getBytes()); // waits behind a's split element
        p.server.onComplete(a);
        assertTrue(p.server.hasQueuedParts());
        while (p.server.hasQueuedParts()) {
            p.server.sendParts(4);
        }
        p.pump();
        List<String> got = new ArrayList<>();
        for (Event e : p.clientEvents) {
            if (e instanceof Event.Element el) {
                got.add(el.id() + ":" + new String(el.data()));
            } else if (e instanceof Event.Completed c) {
                got.add(c.id() + ":done");
            }
        }
        assertEquals(got, List.of("2:abcdefgh", "1:0123456789", "1:xy", "1:done"));
    }

    @Test(timeOut = 5_000)
    public void anElementOfManyPartsIsJoinedByteForByteWhateverTheReadsLookLike() {
        Pair p = new Pair();
        long id = p.client.subscribe("big", 2);
        p.pump();
        p.server.onSubscribe(id, 0);
        byte[] big = new byte[300_000 + 17]; // five parts of the default 64 KiB threshold, the last one short
        new java.util.Random(16).nextBytes(big);
        p.server.onNext(id, big);
        p.server.onNext(id, new byte[] {7});
        while (p.server.hasQueuedParts()) {
            p.server.sendParts(1);
        }
        byte[] wire = p.server.dataToSend();
        for (int at = 0; at < wire.length; at += 7_001) { // reads that cut headers and payloads anywhere
            p.client.receiveData(wire, at, Math.min(7_001, wire.length - at));
        }
        List<byte[]> got = new ArrayList<>();
        for (Event e : p.client.events()) {
            if (e instanceof Event.Element el) {
                got.add(el.data());
            }
        }
        assertEquals(got.size(), 2);
        assertTrue(Arrays.equals(got.get(0), big));
        assertTrue(Arrays.equals(got.get(1), new byte[] {7}));
    }

    @Test(timeOut = 5_000)
    public void packedElementsCountAgainstDemand() {
        Pair p = new Pair();
        long id = p.client.subscribe("n", 3);
        p.pump();
        p.server.onSubscribe(id, 2);
        assertTrue(p.server.onNextPacked(id, new byte[] {1, 2, 3, 4, 5, 6}, 3));
        assertThrows(IllegalStateException.class, () -> p.server.onNextPacked(id, new byte[] {1, 2}, 1));
        p.pump();
        Event.Packed packed = (Event.Packed) p.clientEvents.stream().filter(e -> e instanceof Event.Packed).findFirst().orElseThrow();
        assertEquals(packed.count(), 3);
        assertEquals(packed.size(), 2);
        assertTrue(Arrays.equals(packed.data(), new byte[] {1, 2, 3, 4, 5, 6}));
    }

    @Test(timeOut = 5_000)
    public void pingIsAnsweredOnlyWhenKeepaliveIsActive() {
        Connection server = new Connection(Connection.Side.SERVER, Limits.DEFAULT, Set.of(1L));
        server.dataToSend();
        byte[] in = Hex.decode("01 00 01 01 80 08 01 02 03 04 05 06 07 08");
        server.receiveData(in, 0, in.length);
        assertEquals(Hex.encode(server.dataToSend()), "81 08 01 02 03 04 05 06 07 08");

        Connection plain = new Connection(Connection.Side.SERVER, Limits.DEFAULT, Set.of());
        plain.receiveData(in, 0, in.length);
        Event.Closed c = closed(plain, new ArrayList<>());
        assertTrue(c.error().getMessage().contains("§4.4"), c.error().getMessage());
    }

    @Test(timeOut = 5_000)
    public void goodbyeIsAnsweredAndEndsTheConnection() {
        Pair p = new Pair();
        p.pump();
        p.client.goodbye("bye");
        p.pump();
        assertEquals(p.client.state(), Connection.State.CLOSED);
        assertEquals(p.server.state(), Connection.State.CLOSED);
        Event.Closed atServer = closed(p.server, p.serverEvents);
        assertEquals(atServer.reason(), "bye");
        assertNull(atServer.error());
        assertThrows(IllegalStateException.class, () -> p.client.subscribe("x", 1));
    }

    @Test(timeOut = 5_000)
    public void aViolationAfterOurGoodbyeEndsTheConnectionWithoutASecondGoodbye() {
        for (String hex : List.of("0e", "01 00 00 04 05")) { // an unknown type (§3); input that ends inside a message (§9.3)
            Pair p = new Pair();
            p.pump();
            p.client.goodbye("bye");
            p.client.dataToSend();
            byte[] in = Hex.decode(hex);
            p.client.receiveData(in, 0, in.length);
            p.client.receiveEof();
            Event.Closed c = closed(p.client, new ArrayList<>());
            assertNotNull(c.error(), hex);
            assertEquals(p.client.state(), Connection.State.CLOSED, hex);
            assertEquals(p.client.dataToSend().length, 0, hex + ": nothing goes out after our goodbye (§9.1)");
        }
    }

    @Test(timeOut = 5_000)
    public void malformedVarintsAndTruncationAreFramingErrors() {
        for (String hex : List.of("01 00 00 06 80 00", "01 00 00 05 01 ff ff ff ff ff ff ff ff ff 02")) {
            Connection server = new Connection(Connection.Side.SERVER, Limits.DEFAULT, Set.of());
            byte[] in = Hex.decode(hex);
            server.receiveData(in, 0, in.length);
            Event.Closed c = closed(server, new ArrayList<>());
            assertTrue(c.error().getMessage().contains("§2.1"), hex + ": " + c.error().getMessage());
        }
        Connection server = new Connection(Connection.Side.SERVER, Limits.DEFAULT, Set.of());
        byte[] in = Hex.decode("01 00 00 04 05 74");
        server.receiveData(in, 0, in.length);
        server.receiveEof();
        Event.Closed c = closed(server, new ArrayList<>());
        assertTrue(c.error().getMessage().contains("§9.3"), c.error().getMessage());
    }
}
