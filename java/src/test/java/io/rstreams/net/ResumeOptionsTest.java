package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.rstreams.testing.RawSockets;
import io.rstreams.wire.Connection;
import io.rstreams.wire.Frame;
import io.rstreams.wire.FrameParser;
import io.rstreams.wire.FrameType;
import io.rstreams.wire.FrameWriter;
import io.rstreams.wire.Limits;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.testng.annotations.Test;

/**
 * The replay buffer's size and the acknowledgement delay of extension resume (PROTOCOL.md §16.4,
 * §16.7; rstreams' {@code buffer_bytes} and {@code ack_delay}) on both builders: what they refuse,
 * and that each side acknowledges after a quarter of its buffer or after its delay.
 */
public class ResumeOptionsTest {
    private static final Duration HOUR = Duration.ofHours(1);

    @Test
    public void bothBuildersRefuseABufferBelow4096AndANullOrNegativeAckDelayNamingTheOption() {
        List<Consumer<Long>> buffers = List.of(b -> RsioClient.builder().bufferBytes(b), b -> RsioServer.builder().bufferBytes(b));
        List<Consumer<Duration>> delays = List.of(d -> RsioClient.builder().ackDelay(d), d -> RsioServer.builder().ackDelay(d));
        for (Consumer<Long> buffer : buffers) {
            for (long bad : new long[] {4095, 0, -1}) {
                IllegalArgumentException e = expectThrows(IllegalArgumentException.class, () -> buffer.accept(bad));
                assertEquals(e.getMessage(), "bufferBytes must be >= 4096, got " + bad);
            }
            buffer.accept(4096L);
        }
        for (Consumer<Duration> delay : delays) {
            for (Duration bad : java.util.Arrays.asList(null, Duration.ofMillis(-1))) {
                IllegalArgumentException e = expectThrows(IllegalArgumentException.class, () -> delay.accept(bad));
                assertEquals(e.getMessage(), "ackDelay must be >= 0 (zero: at once), got " + bad);
            }
            delay.accept(Duration.ZERO); // as rstreams' ack_delay=0
        }
    }

    /** The positions of the resumeAcks among {@code frames}. */
    private static List<Long> acks(List<Frame> frames) throws Exception {
        List<Long> out = new ArrayList<>();
        for (Frame f : frames) {
            if (f instanceof Frame.Extension x && x.type() == FrameType.RESUME_ACK) {
                out.add(ResumeFrames.position(x.payload(), "resumeAck"));
            }
        }
        return out;
    }

    private static List<Frame> outbound(EmbeddedChannel channel) throws Exception {
        FrameParser parser = new FrameParser(Limits.DEFAULT);
        for (ByteBuf b = channel.readOutbound(); b != null; b = channel.readOutbound()) {
            byte[] bytes = new byte[b.readableBytes()];
            b.readBytes(bytes);
            b.release();
            parser.feed(bytes, 0, bytes.length);
        }
        return parser.parseAll();
    }

    @Test(timeOut = 10_000)
    public void whatArrivedIsAcknowledgedAfterTheAckDelayOrAtAQuarterOfTheBuffer() throws Exception {
        // virtual time: a client endpoint with a 200 ms delay and an 8 KiB buffer
        Endpoint client = new Endpoint(Connection.Side.CLIENT, new Endpoint.Options(Limits.DEFAULT, new Routes(), null, null, null,
                null, null, null, new Endpoint.ResumeOptions(8192, null, null, (session, attempt) -> {}, null, Duration.ofMillis(200)),
                null, true));
        EmbeddedChannel channel = new EmbeddedChannel(client);
        channel.freezeTime();
        byte[] opening = concat(FrameWriter.encode(new Frame.Hello(true, 0, List.of(FrameType.KEEPALIVE, FrameType.RESUME_EXTENSION)), 0),
                FrameWriter.encode(new Frame.Extension(FrameType.RESUME_TOKEN, new byte[16]), 0));
        channel.writeInbound(Unpooled.wrappedBuffer(opening));
        channel.runPendingTasks();
        advance(channel, 199);
        assertEquals(acks(outbound(channel)), List.of(), "acknowledged before the ack delay of 200 ms");
        advance(channel, 1);
        assertEquals(acks(outbound(channel)), List.of((long) opening.length), "not acknowledged at the ack delay");
        // a quarter of the buffer (2048 bytes, of pings) is acknowledged at once, the clock standing still
        byte[] quarter = pings(205);
        channel.writeInbound(Unpooled.wrappedBuffer(quarter));
        channel.runPendingTasks();
        assertEquals(acks(outbound(channel)), List.of((long) opening.length + quarter.length));
        channel.finishAndReleaseAll();
    }

    private static void advance(EmbeddedChannel channel, long millis) {
        channel.advanceTimeBy(millis, TimeUnit.MILLISECONDS);
        channel.runScheduledPendingTasks();
        channel.runPendingTasks(); // the flush
    }

    /** {@code n} keepalive pings, 10 bytes each (§14.1). */
    private static byte[] pings(int n) {
        byte[] ping = FrameWriter.encode(new Frame.Extension(FrameType.PING, new byte[8]), 0);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int i = 0; i < n; i++) {
            out.writeBytes(ping);
        }
        return out.toByteArray();
    }

    /** Reads {@code socket} until a resumeAck comes, and returns its position. */
    private static long firstAck(Socket socket) throws Exception {
        InputStream in = socket.getInputStream();
        FrameParser parser = new FrameParser(Limits.DEFAULT);
        byte[] buffer = new byte[4096];
        while (true) {
            int n = in.read(buffer);
            assertTrue(n >= 0, "closed before a resumeAck");
            parser.feed(buffer, 0, n);
            List<Long> acks = acks(parser.parseAll());
            if (!acks.isEmpty()) {
                return acks.get(0);
            }
        }
    }

    @Test(timeOut = 30_000)
    public void theClientsBuilderSetsItsBufferAndAckDelay() throws Exception {
        // bufferBytes(4096): 1024 bytes arriving are acknowledged at once; ackDelay(1 h): nothing
        // before that (the default 20 ms would acknowledge the opening on its own)
        byte[] opening = concat(FrameWriter.encode(new Frame.Hello(true, 0, List.of(FrameType.KEEPALIVE, FrameType.RESUME_EXTENSION)), 0),
                FrameWriter.encode(new Frame.Extension(FrameType.RESUME_TOKEN, new byte[16]), 0));
        byte[] pings = pings(103);
        try (ServerSocket listener = RawSockets.listen();
             RsioClient client = RsioClient.builder().resume(true).bufferBytes(4096).ackDelay(HOUR).build()) {
            client.connect("tcp://127.0.0.1:" + listener.getLocalPort()).get(10, TimeUnit.SECONDS);
            try (Socket server = RawSockets.accept(listener)) {
                server.getOutputStream().write(concat(opening, pings)); // one write: one read, one acknowledgement
                assertEquals(firstAck(server), (long) opening.length + pings.length);
                client.close(Duration.ZERO); // before this transport ends: the session would be resumed
            }
        }
    }

    @Test(timeOut = 30_000)
    public void theServersBuilderSetsItsBufferAndAckDelay() throws Exception {
        byte[] hello = FrameWriter.encode(new Frame.Hello(false, 0, List.of(FrameType.KEEPALIVE, FrameType.RESUME_EXTENSION)), 0);
        byte[] pings = pings(103);
        try (RsioServer server = RsioServer.builder().resume(true).bufferBytes(4096).ackDelay(HOUR).bind("tcp://127.0.0.1:0");
             Socket socket = RawSockets.connect(server.port())) {
            socket.getOutputStream().write(concat(hello, pings)); // one write: one read, one acknowledgement
            assertEquals(firstAck(socket), (long) hello.length + pings.length);
        }
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
