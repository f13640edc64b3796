package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.ssl.SslContext;
import io.rstreams.testing.RawSockets;
import io.rstreams.testing.TlsFixture;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.Test;

/**
 * The client's handshakeTimeout bounds a {@code tls://}, {@code ws://} or {@code wss://}
 * opening once, as rstreams' connect does with its handshake_timeout: the TCP connect, TLS
 * handshake and HTTP upgrade together, not each handshake on its own (which let a slow TLS
 * handshake leave the upgrade a whole bound more).
 */
public class ClientOpeningTest {
    /** Moves what each side wrote to the other until neither writes more. */
    private static void shuttle(EmbeddedChannel client, EmbeddedChannel server) {
        boolean moved = true;
        while (moved) {
            moved = false;
            for (ByteBuf b = client.readOutbound(); b != null; b = client.readOutbound()) {
                server.writeInbound(b);
                moved = true;
            }
            for (ByteBuf b = server.readOutbound(); b != null; b = server.readOutbound()) {
                client.writeInbound(b);
                moved = true;
            }
            client.runPendingTasks();
            server.runPendingTasks();
        }
    }

    private static void advance(EmbeddedChannel channel, long millis) {
        channel.advanceTimeBy(millis, TimeUnit.MILLISECONDS);
        channel.runScheduledPendingTasks();
        channel.runPendingTasks();
    }

    @Test(timeOut = 20_000)
    public void aSlowTlsHandshakeLeavesTheUpgradeOnlyWhatIsLeftOfTheBound() throws Exception {
        // The client's real wss:// pipeline on Netty's virtual clock, a TLS server in memory: the
        // server's answer to the ClientHello comes 6 s into a 10 s bound, the upgrade that follows
        // is never answered, and the opening is closed at 10 s (before, the upgrade had 10 s of its own).
        TlsFixture tls = TlsFixture.get();
        SslContext clientTls = Pipelines.sslContext(tls.client, true);
        SslContext serverTls = Pipelines.sslContext(tls.server, false);
        OpeningDeadline deadline = new OpeningDeadline(Duration.ofSeconds(10));
        boolean[] up = {false};
        EmbeddedChannel client = new EmbeddedChannel();
        client.freezeTime(); // before the pipeline is built: the bound is counted from 0
        client.pipeline().addLast(new ChannelInitializer<Channel>() { // as the bootstrap's, on an active channel
            @Override
            protected void initChannel(Channel ch) {
                Pipelines.client(ch.pipeline(), RsioUrl.parse("wss://127.0.0.1:9/rsio"), clientTls, deadline,
                        new ChannelInboundHandlerAdapter() {
                            @Override
                            public void channelActive(ChannelHandlerContext ctx) {
                                up[0] = true;
                            }
                        });
            }
        });
        EmbeddedChannel server = new EmbeddedChannel(serverTls.newHandler(client.alloc()));
        try {
            advance(client, 6_000);
            assertTrue(client.isOpen(), "closed before the TLS handshake completed");
            shuttle(client, server); // the TLS handshake completes at 6 s; the upgrade request goes out
            ByteBuf request = server.readInbound();
            assertTrue(request != null && request.toString(StandardCharsets.US_ASCII).startsWith("GET /rsio HTTP/1.1"),
                    "the upgrade was not sent over TLS: " + request);
            request.release();
            advance(client, 3_999);
            assertTrue(client.isOpen() && !deadline.expired(), "closed before the bound");
            advance(client, 1);
            assertTrue(!client.isOpen() && deadline.expired(), "the upgrade outlived the bound of the whole opening");
            assertTrue(!up[0], "the transport was up");
        } finally {
            client.finishAndReleaseAll();
            server.finishAndReleaseAll();
        }
    }

    @Test(timeOut = 30_000)
    public void aWssConnectToAPeerThatNeverAnswersFailsAtTheBoundNamingTheOpening() throws Exception {
        try (ServerSocket silent = RawSockets.listen();
             RsioClient client = RsioClient.builder().tls(TlsFixture.get().client).handshakeTimeout(Duration.ofMillis(300)).build()) {
            CompletableFuture<RsioConnection> opening = client.connect("wss://127.0.0.1:" + silent.getLocalPort() + "/rsio");
            try (Socket accepted = RawSockets.accept(silent)) {
                ExecutionException failed = expectThrows(ExecutionException.class, () -> opening.get(20, TimeUnit.SECONDS));
                assertEquals(failed.getCause().getMessage(), "can't connect to wss://127.0.0.1:" + silent.getLocalPort()
                        + "/rsio: it did not finish the opening (TCP connect, TLS handshake, HTTP upgrade) within 0.3 s"
                        + " (RsioClient.Builder.handshakeTimeout); it may not be an RS.io server");
            }
        }
    }
}
