package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.RawSockets;
import io.rstreams.testing.TestSubscriber;
import io.rstreams.wire.Connection;
import io.rstreams.wire.Event;
import io.rstreams.wire.FrameType;
import io.rstreams.wire.Limits;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.testng.annotations.Test;

/**
 * A channel's opener sends its input only while the connection takes more (PROTOCOL.md §21.4,
 * §6.3): a peer that grants all the input demand there is and then reads nothing does not make
 * the Java end queue input without bound (before, it requested what was granted 64 elements at a
 * time until its own backlog passed MAX_UNSENT and it said goodbye to the peer); once the peer
 * reads again, the input goes on. With extension resume the replay buffer's bound holds output
 * back too (§16.4): the peer's acknowledgements let it go on, a served stream's (which stalled
 * there, its demand unbounded) as a channel's input.
 */
public class ChannelInputBackpressureTest {
    private static final int ELEMENT = 16 * 1024;
    /** The replay buffer of a resumable connection (the builders' resume(true)). */
    private static final long REPLAY_BYTES = 4L << 20;

    /** An endless input of ELEMENT-byte elements, counting those it emitted. */
    private static Flow.Publisher<byte[]> endless(AtomicLong emitted) {
        return s -> s.onSubscribe(new Flow.Subscription() {
            private long demand;
            private boolean emitting;
            private boolean cancelled;

            @Override
            public void request(long n) {
                demand = Connection.addDemand(demand, n);
                if (emitting) {
                    return; // the loop below takes it (rule 3.3)
                }
                emitting = true;
                while (demand > 0 && !cancelled) {
                    demand--;
                    emitted.incrementAndGet();
                    s.onNext(new byte[ELEMENT]);
                }
                emitting = false;
            }

            @Override
            public void cancel() {
                cancelled = true;
            }
        });
    }

    /** Runs nothing on the connection's I/O thread, after what is queued there (twice: tasks may queue tasks). */
    private static void drain(Endpoint endpoint) throws Exception {
        for (int i = 0; i < 2; i++) {
            CompletableFuture<Void> done = new CompletableFuture<>();
            endpoint.execute(() -> done.complete(null));
            done.get(10, TimeUnit.SECONDS);
        }
    }

    @Test(timeOut = 60_000)
    public void inputWaitsWhileThePeerDoesNotReadAndGoesOnWhenItDoes() throws Exception {
        AtomicLong emitted = new AtomicLong();
        try (ServerSocket listener = new ServerSocket()) {
            listener.setReceiveBufferSize(4096); // accepted sockets take little of what the client sends
            listener.bind(new java.net.InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1);
            try (RsioClient client = RsioClient.builder().keepalive(null).build()) {
                CompletableFuture<RsioConnection> connecting = client.connect("tcp://127.0.0.1:" + listener.getLocalPort());
                try (Socket socket = RawSockets.accept(listener)) {
                    // the peer: a server that grants the channel 2**63 - 1 input elements, then reads nothing
                    Connection peer = new Connection(Connection.Side.SERVER, Limits.DEFAULT, Set.of(FrameType.CHANNELS, FrameType.INPUT_PARTS));
                    OutputStream out = socket.getOutputStream();
                    InputStream in = socket.getInputStream();
                    out.write(peer.dataToSend());
                    RsioConnection conn = connecting.get(10, TimeUnit.SECONDS);
                    TestSubscriber<byte[]> output = new TestSubscriber<>();
                    conn.channel("sink", endless(emitted)).subscribe(output);
                    long id = -1;
                    byte[] buffer = new byte[4096];
                    while (id < 0) {
                        int n = in.read(buffer);
                        assertTrue(n > 0, "the client closed before its channel's subscribe");
                        peer.receiveData(buffer, 0, n);
                        for (Event e : peer.events()) {
                            if (e instanceof Event.Subscribed s) {
                                id = s.id();
                            }
                        }
                    }
                    assertTrue(peer.onSubscribe(id, 0));
                    peer.requestInput(id, Long.MAX_VALUE);
                    out.write(peer.dataToSend());
                    out.flush();

                    // Waits for a state, whatever the time it takes: the channel takes no more and the
                    // input stopped (nothing emitted while the I/O thread ran what was queued twice over).
                    Endpoint endpoint = conn.endpoint();
                    long waiting = -1;
                    while (true) {
                        assertTrue(conn.isOpen(), "the client closed after " + emitted.get() + " elements: " + endpoint.closedError());
                        assertTrue(emitted.get() * ELEMENT < Endpoint.MAX_UNSENT, emitted.get() + " elements emitted");
                        drain(endpoint);
                        long before = emitted.get();
                        drain(endpoint);
                        if (emitted.get() == before && !endpoint.channelWritable()) {
                            waiting = before;
                            break;
                        }
                        Thread.sleep(5);
                    }
                    long unsent = endpoint.peakUnsent();
                    System.err.printf("channel input to a peer not reading: %d elements of %d bytes emitted, at most %d bytes unsent%n",
                            waiting, ELEMENT, unsent);
                    assertTrue(conn.isOpen(), "the client closed: " + endpoint.closedError());
                    // what Netty holds: below the high-water mark, plus one turn's write (about 1 MiB)
                    assertTrue(unsent < 2 * ChannelSender.WRITE_LIMIT, unsent + " bytes unsent at once");
                    assertTrue(waiting * ELEMENT < Endpoint.MAX_UNSENT, waiting + " elements emitted");

                    // the peer reads again: the input goes on
                    long until = waiting + 3 * ChannelSender.WRITE_LIMIT / ELEMENT;
                    while (emitted.get() < until) {
                        int n = in.read(buffer);
                        assertTrue(n > 0, "the client closed after " + emitted.get() + " elements: " + endpoint.closedError());
                    }
                    assertTrue(conn.isOpen());
                    output.subscription().cancel();
                }
            }
        }
    }

    /** A channel's input of that many elements, counted by the server; answered with the count. */
    private static Flow.Publisher<byte[]> counted(Flow.Publisher<byte[]> input) {
        return downstream -> input.subscribe(new Flow.Subscriber<byte[]>() {
            private long count;

            @Override
            public void onSubscribe(Flow.Subscription s) {
                downstream.onSubscribe(new Flow.Subscription() {
                    @Override
                    public void request(long n) {}

                    @Override
                    public void cancel() {
                        s.cancel();
                    }
                });
                s.request(Long.MAX_VALUE);
            }

            @Override
            public void onNext(byte[] item) {
                count++;
            }

            @Override
            public void onError(Throwable t) {
                downstream.onError(t);
            }

            @Override
            public void onComplete() {
                downstream.onNext(Long.toString(count).getBytes(StandardCharsets.UTF_8));
                downstream.onComplete();
            }
        });
    }

    @Test(timeOut = 60_000)
    public void outputWaitingAtTheReplayBoundGoesOnWithTheAcknowledgements() throws Exception {
        long n = 2 * REPLAY_BYTES / ELEMENT; // twice the replay buffer
        try (RsioServer server = RsioServer.builder().resume(true)
                        .route("big", r -> Counters.repeat(new byte[ELEMENT], n))
                        .channel("count", (input, r) -> counted(input))
                        .bind("tcp://127.0.0.1:0");
                RsioClient client = RsioClient.builder().resume(true).build();
                RsioConnection conn = client.connect(server.url()).get(10, TimeUnit.SECONDS)) {
            TestSubscriber<byte[]> served = new TestSubscriber<>();
            conn.publisher("big").subscribe(served);
            served.request(Long.MAX_VALUE); // no later request wakes the server's stream
            assertNull(served.awaitTerminal());
            assertEquals(served.all().size(), (int) n);
            TestSubscriber<byte[]> count = new TestSubscriber<>();
            conn.channel("count", Counters.repeat(new byte[ELEMENT], n)).subscribe(count);
            count.request(1);
            assertNull(count.awaitTerminal());
            assertEquals(new String(count.all().get(0), StandardCharsets.UTF_8), Long.toString(n));
        }
    }
}
