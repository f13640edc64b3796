package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.ssl.SslHandler;
import io.rstreams.testing.RawSockets;
import io.rstreams.testing.TlsFixture;
import io.rstreams.wire.Connection;
import io.rstreams.wire.Event;
import io.rstreams.wire.FrameType;
import io.rstreams.wire.Limits;
import io.rstreams.wire.Frame;
import io.rstreams.wire.FrameWriter;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import javax.net.ssl.SSLSocket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.testng.annotations.Test;

/**
 * After an error goodbye the server reads and discards the peer's input for the linger time
 * (§10), so that the peer reads the goodbye; a peer that floods meanwhile is cut off once
 * {@link Endpoint#LINGER_BYTES} are discarded, as rstreams' LINGER_BYTES. Before, the I/O thread
 * read and dropped all it could for the whole 2 s: about 200 MB from one peer on loopback
 * (tests/conformance/test_hostile_polyglot.py found it). A linger that ends with our output
 * still unsent (the peer has not read even the goodbye) resets the transport, as rstreams aborts
 * its transport, so the peer does not see a clean end of input after a part of our output cut
 * anywhere (a truncated frame, §9.3, or an end without goodbye): over TCP and TLS (what the TLS
 * layer holds counts as unsent); a Unix socket cannot be reset, and its peer's input ends in an
 * error instead.
 */
public class LingerTest {
    private static final long FLOOD = 512L << 20; // what the peer tries to write after its violation

    @Test(timeOut = 60_000)
    public void aPeerFloodingAfterItsErrorIsCutOffOnceTheLingerBytesAreDiscarded() throws Exception {
        try (RsioServer server = RsioServer.builder().bind("tcp://127.0.0.1:0");
             Socket socket = RawSockets.connect(server.port())) {
            OutputStream out = socket.getOutputStream();
            out.write(new byte[] {0x01, 0x00, 0x00, 0x0E}); // a clientHello, then an unknown type byte (§3)
            AtomicLong written = new AtomicLong();
            Thread flood = new Thread(() -> {
                byte[] chunk = new byte[1 << 20];
                try {
                    while (written.get() < FLOOD) {
                        out.write(chunk);
                        written.addAndGet(chunk.length);
                    }
                } catch (IOException reset) {
                    // the server closed
                }
            });
            flood.start();
            List<Frame> frames = RawSockets.readToTheEnd(socket);
            flood.join();
            assertEquals(RawSockets.lastGoodbye(frames), "unknown message type 0x0e (PROTOCOL.md §3)");
            // LINGER_BYTES discarded, plus what the kernel's buffers of both ends held
            assertTrue(written.get() < 64L << 20, "the server took " + written.get() + " bytes after its goodbye");
        }
    }

    @Test(timeOut = 60_000)
    public void aLingerEndingWithOutputUnsentResetsTheTransport() throws Exception {
        CompletableFuture<RsioConnection> accepted = new CompletableFuture<>();
        try (RsioServer server = stuck(accepted).bind("tcp://127.0.0.1:0");
                Socket peer = new Socket()) {
            peer.setReceiveBufferSize(16 * 1024);
            peer.connect(new InetSocketAddress("127.0.0.1", server.port()));
            subscribeThenReadUntilReset(peer, accepted);
        }
    }

    /** A server whose endless stream the peer never reads: its idle timeout's goodbye queues behind it, and the linger ends. */
    private static RsioServer.Builder stuck(CompletableFuture<RsioConnection> accepted) {
        byte[] element = new byte[1000];
        return RsioServer.builder()
                .route("endless", r -> Counters.repeat(element, Long.MAX_VALUE))
                .keepalive(null)
                .idleTimeout(Duration.ofMillis(500)) // the peer is silent after its subscribe: its stream fills the buffers meanwhile
                .onConnection(accepted::complete);
    }

    /**
     * Subscribes {@code peer} to the {@link #stuck} server's endless stream, reads nothing until
     * the server's connection has closed (its goodbye queued behind the unread elements, the
     * linger of 2 s over), then reads: some bytes, then a reset.
     */
    private static void subscribeThenReadUntilReset(Socket peer, CompletableFuture<RsioConnection> accepted) throws Exception {
        peer.setSoTimeout(RawSockets.READ_DEADLINE_MS);
        peer.getOutputStream().write(FrameWriter.encode(new Frame.Hello(false, 0, List.of()), 0));
        peer.getOutputStream().write(FrameWriter.encode(new Frame.Subscribe("endless", 1, 1L << 40), 0));
        accepted.get(20, TimeUnit.SECONDS).onClose().get(30, TimeUnit.SECONDS);
        InputStream in = peer.getInputStream();
        byte[] buffer = new byte[1 << 16];
        long[] read = {0};
        SocketException reset = expectThrows(SocketException.class, () -> {
            for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
                read[0] += n;
            }
        });
        assertTrue(read[0] > 0 && reset.getMessage().contains("reset"), read[0] + " bytes, then " + reset);
    }

    @Test(timeOut = 60_000)
    public void aTlsLingerEndingWithOutputUnsentResetsTheTransport() throws Exception {
        CompletableFuture<RsioConnection> accepted = new CompletableFuture<>();
        try (RsioServer server = stuck(accepted).tls(TlsFixture.get().server).bind("tls://127.0.0.1:0");
                Socket raw = new Socket()) {
            raw.setReceiveBufferSize(16 * 1024);
            raw.connect(new InetSocketAddress("127.0.0.1", server.port()));
            SSLSocket peer = (SSLSocket) TlsFixture.get().client.getSocketFactory().createSocket(raw, "127.0.0.1", server.port(), true);
            peer.setSoTimeout(RawSockets.READ_DEADLINE_MS);
            peer.startHandshake();
            subscribeThenReadUntilReset(peer, accepted);
        }
    }

    /**
     * A Unix socket cannot be reset (Linux ignores SO_LINGER there): the peer reads what its
     * socket holds, then its end of input. Our goodbye came last and not all of it went out, so
     * that end is an error for the peer (a frame cut short, or no goodbye, §9.3), never an orderly one.
     */
    @Test(timeOut = 60_000)
    public void aUnixLingerEndingWithOutputUnsentEndsThePeersInputInError() throws Exception {
        Path path = Files.createTempDirectory("rsio").resolve("rsio.sock");
        CompletableFuture<RsioConnection> accepted = new CompletableFuture<>();
        try (RsioServer server = stuck(accepted).bind("unix://" + path);
                SocketChannel socket = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            socket.connect(UnixDomainSocketAddress.of(path));
            Connection peer = new Connection(Connection.Side.CLIENT, Limits.DEFAULT, Set.of());
            peer.subscribe("endless", 1L << 40);
            socket.write(ByteBuffer.wrap(peer.dataToSend()));
            accepted.get(20, TimeUnit.SECONDS).onClose().get(30, TimeUnit.SECONDS);
            ByteBuffer buffer = ByteBuffer.allocate(1 << 16);
            long read = 0;
            List<Event> events = new java.util.ArrayList<>();
            for (int n = socket.read(buffer.clear()); n >= 0; n = socket.read(buffer.clear())) {
                read += n;
                peer.receiveData(buffer.array(), 0, n);
                events.addAll(peer.events());
            }
            peer.receiveEof();
            events.addAll(peer.events());
            List<Event.Closed> closed = events.stream().filter(e -> e instanceof Event.Closed).map(e -> (Event.Closed) e).toList();
            assertTrue(read > 0 && closed.size() == 1 && closed.get(0).error() != null, read + " bytes, then " + closed);
        }
    }

    /**
     * What the TLS layer still holds counts as unsent (Netty's SslHandler adds its queue to the
     * channel's pending bytes), so a bounded wait that ends with it resets the transport: here
     * the hello, written before the TLS handshake is done.
     */
    @Test(timeOut = 30_000)
    public void outputTheTlsLayerHoldsCountsAsUnsent() throws Exception {
        Endpoint endpoint = new Endpoint(Connection.Side.CLIENT,
                new Endpoint.Options(Limits.DEFAULT, new Routes(), null, null, null, null, null, null, null, null, true));
        SslHandler tls = Pipelines.sslContext(TlsFixture.get().client, true).newHandler(ByteBufAllocator.DEFAULT);
        EmbeddedChannel channel = new EmbeddedChannel(tls, endpoint);
        try {
            channel.runPendingTasks();
            for (ByteBuf b = channel.readOutbound(); b != null; b = channel.readOutbound()) {
                assertEquals(b.getByte(b.readerIndex()), (byte) 22, "only TLS handshake records reach the socket"); // RFC 8446 §5.1
                b.release();
            }
            byte[] hello = FrameWriter.encode(new Frame.Hello(false, 0,
                    List.of(FrameType.KEEPALIVE, FrameType.CONTENT_TYPES, FrameType.METADATA, FrameType.ERROR_CODES,
                            FrameType.MESSAGES, FrameType.CHANNELS, FrameType.INPUT_PARTS)), 0);
            assertEquals(endpoint.unsent(), hello.length, "the hello the TLS layer holds");
        } finally {
            channel.finishAndReleaseAll();
        }
    }
}
