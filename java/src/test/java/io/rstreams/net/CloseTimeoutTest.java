package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.rstreams.testing.RawSockets;
import io.rstreams.testing.TestSubscriber;
import io.rstreams.wire.Connection;
import io.rstreams.wire.Frame;
import io.rstreams.wire.FrameParser;
import io.rstreams.wire.FrameType;
import io.rstreams.wire.FrameWriter;
import io.rstreams.wire.Limits;
import java.io.InputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.Test;

/**
 * How long an orderly close waits (PROTOCOL.md §9.1), as rstreams' Connection.aclose and
 * Server.aclose: the peer's answer for five seconds at most (CLOSE_TIMEOUT), no answer at all
 * before the peer's hello (the two-second linger then bounds the close), and a server's
 * connections all at once. The bounds are checked on the virtual clock of Netty's
 * EmbeddedChannel; the server's close over real sockets only has to return.
 */
public class CloseTimeoutTest {
    private static final long LINGER_MILLIS = 2000;

    /** One endpoint on an EmbeddedChannel whose clock moves only when the test says so. */
    private static final class Embedded {
        final Endpoint endpoint;
        final EmbeddedChannel channel;
        private final FrameParser parser = new FrameParser(Limits.DEFAULT);

        Embedded(Connection.Side side) {
            endpoint = new Endpoint(side, new Endpoint.Options(Limits.DEFAULT, new Routes(), null, null, null, null, null, null, null, null, true));
            channel = new EmbeddedChannel(endpoint); // no timer is armed until the close (no keepalive, idle or handshake timeout)
            channel.freezeTime();
        }

        void receive(Frame... frames) {
            for (Frame f : frames) {
                channel.writeInbound(Unpooled.wrappedBuffer(FrameWriter.encode(f, 0)));
            }
            channel.runPendingTasks();
        }

        void receiveBytes(byte[] bytes) {
            channel.writeInbound(Unpooled.wrappedBuffer(bytes));
            channel.runPendingTasks();
        }

        /** What the endpoint has written since the last call. */
        List<Frame> sent() throws Exception {
            channel.runPendingTasks();
            List<Frame> frames = new ArrayList<>();
            for (ByteBuf b = channel.readOutbound(); b != null; b = channel.readOutbound()) {
                byte[] bytes = new byte[b.readableBytes()];
                b.readBytes(bytes);
                b.release();
                parser.feed(bytes, 0, bytes.length);
                frames.addAll(parser.parseAll());
            }
            return frames;
        }

        /** Moves the virtual clock and runs what fell due. */
        void advance(long millis) {
            channel.advanceTimeBy(millis, TimeUnit.MILLISECONDS);
            channel.runScheduledPendingTasks();
            channel.runPendingTasks();
        }
    }

    private static Frame.Hello hello(boolean fromServer) {
        return new Frame.Hello(fromServer, 0, List.of(FrameType.ERROR_CODES));
    }

    private static void awaitsTheAnswerForTheCloseTimeout(Connection.Side side, CompletableFuture<Void> closed, Embedded e)
            throws Exception {
        List<Frame> goodbye = e.sent();
        assertTrue(goodbye.get(goodbye.size() - 1) instanceof Frame.Goodbye, side + ": " + goodbye);
        e.advance(Endpoint.CLOSE_MILLIS - 1);
        assertTrue(e.channel.isOpen(), side + ": closed before the close timeout (the linger time is not the bound)");
        assertFalse(closed.isDone());
        e.advance(1);
        assertFalse(e.channel.isOpen(), side + ": still open at the close timeout");
        assertTrue(closed.isDone());
    }

    @Test(timeOut = 30_000)
    public void aServerConnectionAwaitsTheAnswerForTheCloseTimeoutThenCloses() throws Exception {
        Embedded e = new Embedded(Connection.Side.SERVER);
        e.receive(hello(false));
        assertTrue(e.sent().get(0) instanceof Frame.Hello);
        CompletableFuture<Void> closed = e.endpoint.closeOrderly("server closing");
        awaitsTheAnswerForTheCloseTimeout(Connection.Side.SERVER, closed, e);
    }

    @Test(timeOut = 30_000)
    public void aClientConnectionAwaitsTheAnswerForTheCloseTimeoutThenCloses() throws Exception {
        Embedded e = new Embedded(Connection.Side.CLIENT);
        e.receive(hello(true));
        assertTrue(e.sent().get(0) instanceof Frame.Hello);
        CompletableFuture<Void> closed = e.endpoint.facade().closeAsync();
        awaitsTheAnswerForTheCloseTimeout(Connection.Side.CLIENT, closed, e);
    }

    @Test(timeOut = 30_000)
    public void aPeerThatAnswersAndEndsItsInputClosesAtOnce() throws Exception {
        Embedded e = new Embedded(Connection.Side.SERVER);
        e.receive(hello(false));
        e.sent();
        CompletableFuture<Void> closed = e.endpoint.closeOrderly("server closing");
        List<Frame> out = e.sent();
        assertEquals(out.size(), 2, out.toString()); // goodbyeCode(0), goodbye
        e.receive(new Frame.Goodbye(""));
        e.channel.pipeline().fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
        e.channel.runPendingTasks();
        assertFalse(e.channel.isOpen(), "the peer answered and ended its input: nothing is left to wait for");
        assertTrue(closed.isDone());
    }

    @Test(timeOut = 30_000)
    public void theAnswerClosesTheTransportEvenIfThePeerKeepsItsInputOpen() throws Exception {
        for (Connection.Side side : Connection.Side.values()) {
            Embedded e = new Embedded(side);
            e.receive(hello(side == Connection.Side.CLIENT));
            e.sent();
            CompletableFuture<Void> closed = side == Connection.Side.SERVER
                    ? e.endpoint.closeOrderly("server closing") : e.endpoint.facade().closeAsync();
            assertEquals(e.sent().size(), 2, side + ": goodbyeCode(0), goodbye");
            byte[] answer = FrameWriter.encode(new Frame.Goodbye("goodbye acknowledged"), 0);
            e.channel.writeInbound(Unpooled.wrappedBuffer(answer, 0, 3)); // the answer in two reads
            e.channel.runPendingTasks();
            assertTrue(e.channel.isOpen(), side + ": closed on part of the answer");
            e.receiveBytes(java.util.Arrays.copyOfRange(answer, 3, answer.length));
            assertFalse(e.channel.isOpen(), side + ": the peer answered: nothing is left to wait for (§9.1)");
            assertTrue(closed.isDone());
            assertEquals(e.sent(), List.of(), side + ": nothing goes out after our goodbye");
        }
    }

    @Test(timeOut = 30_000)
    public void whatThePeerSendsAfterOurGoodbyeIsReadAndDroppedUntilItsAnswer() throws Exception {
        Embedded e = new Embedded(Connection.Side.CLIENT);
        TestSubscriber<byte[]> sub = new TestSubscriber<>();
        e.endpoint.facade().publisher("endless").subscribe(sub);
        e.channel.runPendingTasks();
        sub.request(2);
        e.channel.runPendingTasks();
        e.receive(hello(true), new Frame.OnSubscribe(1, 0), new Frame.OnNext(1, new byte[] {1}));
        assertEquals(sub.all().size(), 1);
        e.sent(); // hello, subscribe, request
        CompletableFuture<Void> closed = e.endpoint.facade().closeAsync();
        assertEquals(e.sent().size(), 2, "goodbyeCode(0), goodbye");
        assertTrue(sub.terminated.getNow(null) instanceof ConnectionClosedException, String.valueOf(sub.terminated.getNow(null)));
        // elements in flight (beyond the demand, which would be a violation before our goodbye),
        // a subscribe, a ping, an onComplete: all discarded, nothing answered (§9.1)
        e.receive(new Frame.OnNext(1, new byte[] {2}), new Frame.OnNext(1, new byte[] {3}), new Frame.OnNext(1, new byte[] {4}),
                new Frame.Subscribe("ours", 1, 1), new Frame.Extension(FrameType.PING, new byte[8]), new Frame.OnComplete(1));
        assertTrue(e.channel.isOpen(), "closed before the answer");
        assertEquals(e.sent(), List.of(), "something answered after our goodbye");
        assertEquals(sub.all().size(), 1, "an element after onError");
        e.receive(new Frame.Goodbye("goodbye acknowledged"));
        assertFalse(e.channel.isOpen(), "the answer came: the transport closes");
        assertTrue(closed.isDone());
    }

    @Test(timeOut = 30_000)
    public void aViolationAfterOurGoodbyeEndsTheWaitAndTheCloseLingersWithoutASecondGoodbye() throws Exception {
        for (boolean peerCloses : new boolean[] {false, true}) {
            Embedded e = new Embedded(Connection.Side.SERVER);
            e.receive(hello(false));
            e.sent();
            CompletableFuture<Void> closed = e.endpoint.closeOrderly("server closing");
            assertEquals(e.sent().size(), 2, "goodbyeCode(0), goodbye");
            e.receiveBytes(new byte[] {0x0E}); // a message of an unknown type (§3)
            assertTrue(e.channel.isOpen(), "closed at once: unread input would reset the transport, our goodbye with it");
            e.receive(new Frame.Subscribe("ours", 1, 1), new Frame.Goodbye("late")); // discarded, even a goodbye
            assertEquals(e.sent(), List.of(), "we said goodbye already: nothing more goes out (§9.1)");
            if (peerCloses) {
                e.channel.pipeline().fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
                e.channel.runPendingTasks();
                assertFalse(e.channel.isOpen(), "the peer ended its input: nothing is left to linger for");
            } else {
                e.advance(LINGER_MILLIS - 1);
                assertTrue(e.channel.isOpen(), "the linger is two seconds");
                assertFalse(closed.isDone());
                e.advance(1);
                assertFalse(e.channel.isOpen(), "still open after the linger");
            }
            assertTrue(closed.isDone());
            assertEquals(e.sent(), List.of());
        }
    }

    @Test(timeOut = 30_000)
    public void beforeThePeersHelloNoAnswerIsAwaitedAndTheLingerBoundsTheClose() throws Exception {
        for (Connection.Side side : Connection.Side.values()) {
            Embedded e = new Embedded(side);
            e.sent(); // our hello
            CompletableFuture<Void> closed = side == Connection.Side.SERVER
                    ? e.endpoint.closeOrderly("server closing") : e.endpoint.facade().closeAsync();
            List<Frame> out = e.sent();
            assertEquals(out.size(), 1, side + ": a goodbye without a code (§19.1): " + out);
            assertTrue(out.get(0) instanceof Frame.Goodbye, side + ": " + out);
            e.advance(LINGER_MILLIS - 1);
            assertTrue(e.channel.isOpen(), side + ": the peer may be reading the goodbye");
            e.advance(1);
            assertFalse(e.channel.isOpen(), side + ": still open after the linger");
            assertTrue(closed.isDone());
        }
    }

    @Test(timeOut = 60_000)
    public void aServerClosingOnPeersThatNeverAnswerReturnsAndEachSawItsGoodbye() throws Exception {
        RsioServer server = RsioServer.builder().bind("tcp://127.0.0.1:0");
        List<Socket> peers = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                Socket peer = RawSockets.connect(server.port());
                peers.add(peer);
                peer.getOutputStream().write(FrameWriter.encode(hello(false), 0));
                peer.getOutputStream().write(FrameWriter.encode(new Frame.Subscribe("nope", 1, 1), 0));
                // hello, errorCode(1, 2), onError: the server has read our hello, so its goodbye has a code
                assertTrue(readFrames(peer.getInputStream(), 3).get(2) instanceof Frame.OnError);
            }
            CompletableFuture<Void> closing = CompletableFuture.runAsync(server::close);
            for (Socket peer : peers) {
                List<Frame> frames = RawSockets.readToTheEnd(peer); // never answered: the server closes it
                assertEquals(RawSockets.lastGoodbye(frames), "server closing");
                assertEquals(frames.size(), 2, frames.toString()); // goodbyeCode(0), goodbye
            }
            closing.get(30, TimeUnit.SECONDS);
        } finally {
            for (Socket peer : peers) {
                peer.close();
            }
            server.close();
        }
    }

    /** A client without keepalive, connected to a raw peer that plays its server on a loopback listener. */
    private static final class RawServer implements AutoCloseable {
        final RsioClient client = RsioClient.builder().keepalive(null).build();
        final ServerSocket listener;
        final CompletableFuture<RsioConnection> connecting;
        final Socket peer;
        private final FrameParser parser = new FrameParser(Limits.DEFAULT);

        RawServer() throws Exception {
            listener = RawSockets.listen();
            connecting = client.connect("tcp://127.0.0.1:" + listener.getLocalPort());
            peer = RawSockets.accept(listener);
        }

        /** At least {@code count} more frames from the client (a frame cut by a read is kept for the next call). */
        List<Frame> read(int count) throws Exception {
            return readFrames(peer.getInputStream(), parser, count);
        }

        void write(Frame... frames) throws Exception {
            for (Frame f : frames) {
                peer.getOutputStream().write(FrameWriter.encode(f, 0));
            }
        }

        /** Reads the client's hello and answers with ours (error-codes offered). */
        void hellos() throws Exception {
            assertTrue(read(1).get(0) instanceof Frame.Hello);
            write(hello(true));
        }

        /**
         * The opening of a connection whose client has read our hello: the client subscribes to
         * {@code refused}, and we answer with our hello and an onError; returns once its
         * subscriber has failed with that.
         */
        RsioConnection opened() throws Exception {
            RsioConnection conn = connecting.get(20, TimeUnit.SECONDS);
            TestSubscriber<byte[]> sub = new TestSubscriber<>();
            conn.publisher("refused").subscribe(sub);
            sub.request(1);
            List<Frame> opening = read(2);
            assertTrue(opening.get(0) instanceof Frame.Hello && opening.get(1) instanceof Frame.Subscribe, opening.toString());
            write(hello(true), new Frame.OnError(1, "refused"));
            assertTrue(sub.awaitTerminal() instanceof RemoteStreamException); // our hello was read before
            return conn;
        }

        /** The client's frames up to its goodbye (the subscribe's request may come first); the last two returned. */
        List<Frame> goodbye() throws Exception {
            List<Frame> sent = new ArrayList<>();
            while (sent.isEmpty() || !(sent.get(sent.size() - 1) instanceof Frame.Goodbye)) {
                sent.addAll(read(1));
            }
            assertTrue(sent.size() >= 2, sent.toString());
            return sent.subList(sent.size() - 2, sent.size());
        }

        @Override
        public void close() throws Exception {
            try (listener; peer) {
                client.close();
            }
        }
    }

    @Test(timeOut = 60_000)
    public void aClientClosingSaysGoodbyeWithCodeZeroOnEachConnectionAndReadsTheAnswer() throws Exception {
        try (RawServer s = new RawServer()) {
            s.opened();
            CompletableFuture<Void> closing = CompletableFuture.runAsync(s.client::close);
            List<Frame> goodbye = s.goodbye();
            assertEquals(((Frame.Extension) goodbye.get(0)).type(), FrameType.GOODBYE_CODE, goodbye.toString());
            assertEquals(((Frame.Extension) goodbye.get(0)).payload(), new byte[] {0}, "code 0, normal (§19.2)");
            assertEquals(RawSockets.lastGoodbye(goodbye), "");
            s.write(new Frame.Goodbye("goodbye acknowledged")); // socket left open
            assertEquals(RawSockets.readToTheEnd(s.peer), List.of(), "the answer closes the transport, and nothing more came");
            closing.get(30, TimeUnit.SECONDS);
        }
    }

    @Test(timeOut = 60_000)
    public void aViolationAfterTheClientsGoodbyeIsAnsweredByItsEndOfInputOnly() throws Exception {
        try (RawServer s = new RawServer()) {
            RsioConnection conn = s.opened();
            CompletableFuture<Void> closed = conn.closeAsync();
            assertTrue(s.goodbye().get(0) instanceof Frame.Extension, "goodbyeCode(0), goodbye: the answer is awaited");
            s.peer.getOutputStream().write(0x0E); // a message of an unknown type (§3)
            // the client half-closes (its input discarded for the linger time at most): no second goodbye
            assertEquals(RawSockets.readToTheEnd(s.peer), List.of());
            s.peer.close(); // ends the linger
            closed.get(20, TimeUnit.SECONDS);
            assertFalse(conn.isOpen());
        }
    }

    @Test(timeOut = 60_000)
    public void aClientClosingEndsTheServersStreamsWithItsGoodbye() throws Exception {
        CompletableFuture<Throwable> atServer = new CompletableFuture<>();
        try (RsioServer server = RsioServer.builder()
                .onConnection(conn -> {
                    TestSubscriber<byte[]> sub = new TestSubscriber<>();
                    sub.terminated.whenComplete((error, e) -> atServer.complete(error));
                    conn.publisher("silent").subscribe(sub); // a publisher of the client (§1)
                })
                .bind("tcp://127.0.0.1:0")) {
            RsioClient client = RsioClient.builder()
                    .serve("silent", r -> Counters.silent())
                    .build();
            try {
                RsioConnection conn = client.connect(server.url()).get(20, TimeUnit.SECONDS);
                TestSubscriber<String> sub = new TestSubscriber<>();
                conn.publisher("nothing-here", Codec.UTF8).subscribe(sub);
                sub.request(1);
                assertTrue(sub.awaitTerminal() instanceof RemoteStreamException); // the server's hello came before its refusal
            } finally {
                client.close();
            }
            Throwable error = atServer.get(20, TimeUnit.SECONDS);
            assertTrue(error instanceof ConnectionClosedException c && c.errorCode() == io.rstreams.wire.ErrorCode.NORMAL,
                    String.valueOf(error));
        }
    }

    @Test(timeOut = 60_000)
    public void aClientClosedWithoutWaitWritesItsGoodbyeAndAwaitsNoAnswer() throws Exception {
        try (RawServer s = new RawServer()) {
            s.hellos();
            CompletableFuture.runAsync(() -> s.client.close(java.time.Duration.ZERO)).get(30, TimeUnit.SECONDS); // no answer given
            List<Frame> frames = RawSockets.readToTheEnd(s.peer);
            assertEquals(RawSockets.lastGoodbye(frames), "", frames.toString());
            expectThrows(IllegalArgumentException.class, () -> s.client.close(java.time.Duration.ofSeconds(-1)));
        }
    }

    private static List<Frame> readFrames(InputStream in, int count) throws Exception {
        return readFrames(in, new FrameParser(Limits.DEFAULT), count);
    }

    /** At least {@code count} frames (all those the reads brought), {@code parser} keeping what is left of a frame. */
    private static List<Frame> readFrames(InputStream in, FrameParser parser, int count) throws Exception {
        List<Frame> frames = new ArrayList<>();
        byte[] buffer = new byte[256];
        while (frames.size() < count) {
            int n = in.read(buffer);
            assertTrue(n >= 0, "closed after " + frames);
            parser.feed(buffer, 0, n);
            frames.addAll(parser.parseAll());
        }
        return frames;
    }
}
