package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.websocketx.CloseWebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocket08FrameDecoder;
import io.netty.handler.codec.http.websocketx.WebSocketDecoderConfig;
import io.netty.handler.codec.http.websocketx.WebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocketServerProtocolHandler;
import io.netty.util.ReferenceCountUtil;
import java.util.ArrayList;
import java.util.List;
import org.testng.annotations.Test;

/**
 * What a WebSocket server reads while its refusing close lingers (PROTOCOL.md §1), in the
 * server's order of handlers: after a frame Netty's decoder refused (an unmasked frame, 1002; a
 * frame above the limit, 1009) nothing read reaches the decoder, which would skip it a byte per
 * decoding step (a megabyte sent after a bad header cost a million steps); after a frame the
 * bridge refused (a text message, 1003) the decoder still reads frames, the peer's close among
 * them. Either way the channel closes past {@link Endpoint#LINGER_BYTES}, and as soon as the
 * peer's close frame is read whole ({@link WebSocketLinger} follows the frames past the refused
 * one), over {@code wss://} too, where its close_notify also ends the wait.
 */
public class WebSocketLingerTest {
    private static final int CHUNK = 64 * 1024;

    /** Counts the bytes passing it: what reaches the frame decoder. */
    private static final class Bytes extends ChannelInboundHandlerAdapter {
        long count;

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof ByteBuf buf) {
                count += buf.readableBytes();
            }
            ctx.fireChannelRead(msg);
        }
    }

    /** The server's frame decoder, counting its decoding steps. */
    private static final class Decoder extends WebSocket08FrameDecoder {
        long steps;

        Decoder() {
            super(WebSocketDecoderConfig.newBuilder().expectMaskedFrames(true).allowExtensions(false)
                    .maxFramePayloadLength(Pipelines.MAX_WS_MESSAGE).closeOnProtocolViolation(false).build());
        }

        @Override
        protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) throws Exception {
            steps++;
            super.decode(ctx, in, out);
        }
    }

    /** The frames the decoder gave (the bridge drops them once it refused). */
    private static final class Frames extends ChannelInboundHandlerAdapter {
        final List<String> seen = new ArrayList<>();

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof WebSocketFrame frame) {
                seen.add(frame.getClass().getSimpleName());
            }
            ctx.fireChannelRead(msg);
        }
    }

    /** A server channel past its opening handshake: bytes counted, frame decoder, Violations, bridge. */
    private record Server(EmbeddedChannel channel, Bytes bytes, Decoder decoder, Frames frames) {}

    private static Server upgraded() {
        Bytes bytes = new Bytes();
        Decoder decoder = new Decoder();
        Frames frames = new Frames();
        EmbeddedChannel channel = new EmbeddedChannel(new WebSocketLinger(true), bytes, decoder, frames, new WebSocketBridge.Violations(),
                new WebSocketBridge());
        channel.freezeTime(); // the linger's 2 s bound never comes: what closes the channel is what is read
        channel.pipeline().fireUserEventTriggered(
                new WebSocketServerProtocolHandler.HandshakeComplete("/rsio", new DefaultHttpHeaders(), WebSocketBridge.SUBPROTOCOL));
        return new Server(channel, bytes, decoder, frames);
    }

    /** A masked client frame (mask 0: the payload as it is) with a 2-byte payload length. */
    private static ByteBuf masked(int opcode, byte[] payload) {
        ByteBuf frame = Unpooled.buffer();
        frame.writeByte(0x80 | opcode);
        if (payload.length < 126) {
            frame.writeByte(0x80 | payload.length);
        } else {
            frame.writeByte(0x80 | 126).writeShort(payload.length);
        }
        frame.writeInt(0).writeBytes(payload);
        return frame;
    }

    private static int closeStatus(EmbeddedChannel channel) {
        String close = close(channel);
        return close == null ? -1 : Integer.parseInt(close.substring(0, 4));
    }

    /** The close frame sent, as "STATUS REASON" (null: none). */
    private static String close(EmbeddedChannel channel) {
        Object out;
        while ((out = channel.readOutbound()) != null) {
            try {
                if (out instanceof CloseWebSocketFrame close) {
                    return close.statusCode() + " " + close.reasonText();
                }
            } finally {
                ReferenceCountUtil.release(out);
            }
        }
        return null;
    }

    /** Sends {@code total} bytes in 64 KiB buffers, as a socket's reads give them; stops once the channel closed. */
    private static void flood(EmbeddedChannel channel, long total) {
        for (long sent = 0; sent < total && channel.isOpen(); sent += CHUNK) {
            channel.writeInbound(Unpooled.wrappedBuffer(new byte[(int) Math.min(CHUNK, total - sent)]));
        }
    }

    private static void assertNothingReachesTheDecoderAfter(Server server, ByteBuf refused, int status) {
        EmbeddedChannel channel = server.channel();
        Bytes bytes = server.bytes();
        Decoder decoder = server.decoder();
        channel.writeInbound(refused);
        assertEquals(closeStatus(channel), status);
        long bytesBefore = bytes.count;
        long stepsBefore = decoder.steps;
        flood(channel, 1 << 20);
        assertTrue(channel.isOpen(), "1 MiB is within the linger's bound");
        assertEquals(bytes.count - bytesBefore, 0, "bytes reaching the decoder after its refusal");
        assertEquals(decoder.steps - stepsBefore, 0, "decoding steps after the decoder's refusal");
        assertFalse(channel.finishAndReleaseAll());
    }

    @Test(timeOut = 60_000)
    public void afterAnUnmaskedFrameNothingReachesTheDecoder() {
        Server channel = upgraded();
        ByteBuf unmasked = Unpooled.wrappedBuffer(new byte[] {(byte) 0x82, 0x03, 1, 2, 3});
        assertNothingReachesTheDecoderAfter(channel, unmasked, 1002);
    }

    @Test(timeOut = 60_000)
    public void afterAFrameAboveTheLimitNothingReachesTheDecoder() {
        Server channel = upgraded();
        ByteBuf header = Unpooled.buffer().writeByte(0x82).writeByte(0x80 | 127).writeLong(Pipelines.MAX_WS_MESSAGE + 1L).writeInt(0);
        assertNothingReachesTheDecoderAfter(channel, header, 1009);
    }

    @Test(timeOut = 60_000)
    public void afterATextMessageTheDecoderStillReadsThePeersClose() {
        Server server = upgraded();
        EmbeddedChannel channel = server.channel();
        channel.writeInbound(masked(0x1, "text".getBytes(java.nio.charset.StandardCharsets.US_ASCII)));
        assertEquals(closeStatus(channel), 1003);
        channel.writeInbound(masked(0x2, new byte[1000]));
        channel.writeInbound(masked(0x8, new byte[] {0x03, (byte) 0xEB})); // the peer's close, 1003
        assertEquals(server.frames().seen, List.of("TextWebSocketFrame", "BinaryWebSocketFrame", "CloseWebSocketFrame"));
        assertFalse(channel.finishAndReleaseAll());
    }

    @Test(timeOut = 10_000)
    public void theDecodersRefusalsSayWhatWasWrongAndCiteTheSection() {
        // the first bytes of a frame Netty's decoder refuses, and the close that answers it
        Object[][] cases = {
            {new byte[] {(byte) 0x82, 0x03}, "1002 incorrect masking (PROTOCOL.md §1)"},
            {new byte[] {(byte) 0xC2, (byte) 0x80}, "1002 reserved bits must be 0 (PROTOCOL.md §1)"},
            {new byte[] {0x09, (byte) 0x80}, "1002 fragmented control frame (PROTOCOL.md §1)"},
            {new byte[] {(byte) 0x89, (byte) 0xFE}, "1002 control frame too long (PROTOCOL.md §1)"},
            {new byte[] {(byte) 0x83, (byte) 0x80}, "1002 invalid opcode (PROTOCOL.md §1)"},
            {new byte[] {(byte) 0x8B, (byte) 0x80}, "1002 invalid opcode (PROTOCOL.md §1)"},
            {new byte[] {(byte) 0x88, (byte) 0x81}, "1002 close frame too short (PROTOCOL.md §1)"},
            {new byte[] {(byte) 0x80, (byte) 0x80}, "1002 unexpected continuation frame (PROTOCOL.md §1)"},
            {new byte[] {(byte) 0x82, (byte) 0xFE, 0x00, 0x10}, "1002 invalid data frame length (not using minimal length "
                    + "encoding) (PROTOCOL.md §1)"},
            {new byte[] {(byte) 0x82, (byte) 0xFF, 0, 0, 0, 0, 0, 0x20, 0, 1}, "1009 frame exceeds limit of 1048576 bytes "
                    + "(PROTOCOL.md §1)"},
        };
        for (Object[] c : cases) {
            EmbeddedChannel channel = upgraded().channel();
            channel.writeInbound(Unpooled.wrappedBuffer((byte[]) c[0]));
            assertEquals(close(channel), c[1]);
            channel.finishAndReleaseAll();
        }
        EmbeddedChannel fragmented = upgraded().channel(); // a new message while one is unfinished
        fragmented.writeInbound(masked(0x2, new byte[0]).setByte(0, 0x02), masked(0x2, new byte[0]));
        assertEquals(close(fragmented), "1002 expected a continuation frame (PROTOCOL.md §1)");
        fragmented.finishAndReleaseAll();
        String longer = "x".repeat(200);
        String cut = WebSocketBridge.reason(new io.netty.handler.codec.http.websocketx.CorruptedWebSocketFrameException(
                io.netty.handler.codec.http.websocketx.WebSocketCloseStatus.PROTOCOL_ERROR, longer));
        assertEquals(cut.getBytes(java.nio.charset.StandardCharsets.UTF_8).length, 123, "a close reason's limit");
        assertTrue(cut.endsWith("x (PROTOCOL.md §1)"), cut);
    }

    /** Writes {@code bytes} a slice at a time (sizes {@code cuts} in turn), checking the channel is still open after each. */
    private static void writeOpen(EmbeddedChannel channel, ByteBuf bytes, int... cuts) {
        for (int i = 0; bytes.isReadable(); i++) {
            assertTrue(channel.isOpen(), "closed before the peer's close frame was read whole");
            channel.writeInbound(bytes.readRetainedSlice(Math.min(cuts[i % cuts.length], bytes.readableBytes())));
        }
        bytes.release();
    }

    @Test(timeOut = 60_000)
    public void aPeerThatAnswersTheCloseIsClosedOnceItsCloseFrameIsRead() {
        // the rest of the refused frame, a binary frame, then the peer's close (1002 answered), fed in pieces
        Server unmasked = upgraded();
        EmbeddedChannel channel = unmasked.channel();
        ByteBuf refused = Unpooled.buffer().writeByte(0x82).writeByte(126).writeShort(300).writeZero(100);
        channel.writeInbound(refused);
        assertEquals(closeStatus(channel), 1002);
        long before = unmasked.bytes().count;
        ByteBuf rest = Unpooled.buffer().writeZero(200).writeBytes(masked(0x2, new byte[10]))
                .writeBytes(masked(0x8, new byte[] {0x03, (byte) 0xEA}));
        writeOpen(channel, rest, 7, 1, 64);
        assertFalse(channel.isOpen(), "the peer's close frame was read: the channel closes");
        assertEquals(unmasked.bytes().count, before, "nothing reaches the decoder after its refusal");
        channel.finishAndReleaseAll();

        // a frame above the limit (1009), its whole payload, then the close
        Server tooBig = upgraded();
        channel = tooBig.channel();
        channel.writeInbound(Unpooled.buffer().writeByte(0x82).writeByte(0x80 | 127).writeLong(Pipelines.MAX_WS_MESSAGE + 1L).writeInt(0));
        assertEquals(closeStatus(channel), 1009);
        rest = Unpooled.buffer().writeZero(Pipelines.MAX_WS_MESSAGE + 1).writeBytes(masked(0x8, new byte[] {0x03, (byte) 0xF1}));
        writeOpen(channel, rest, CHUNK);
        assertFalse(channel.isOpen(), "the peer's close frame was read: the channel closes");
        channel.finishAndReleaseAll();

        // a close frame that came before ours was sent: the channel closes right behind ours
        channel = upgraded().channel();
        channel.writeInbound(Unpooled.buffer().writeByte(0x82).writeByte(0x01).writeByte(9)
                .writeBytes(masked(0x8, new byte[] {0x03, (byte) 0xE8})));
        assertEquals(closeStatus(channel), 1002);
        assertFalse(channel.isOpen(), "the peer's close was read with the refused frame");
        channel.finishAndReleaseAll();
    }

    /** Moves what each channel wrote to the other, until neither writes more. */
    private static void pump(EmbeddedChannel a, EmbeddedChannel b) {
        boolean moved = true;
        while (moved) {
            moved = false;
            for (EmbeddedChannel[] pair : new EmbeddedChannel[][] {{a, b}, {b, a}}) {
                Object out;
                while ((out = pair[0].readOutbound()) != null) {
                    moved = true;
                    if (pair[1].isOpen()) {
                        pair[1].writeInbound(out);
                    } else {
                        ReferenceCountUtil.release(out);
                    }
                }
            }
        }
    }

    /** The plaintext a TLS client channel has read so far. */
    private static ByteBuf plaintext(EmbeddedChannel client) {
        ByteBuf all = Unpooled.buffer();
        Object in;
        while ((in = client.readInbound()) != null) {
            all.writeBytes((ByteBuf) in);
            ReferenceCountUtil.release(in);
        }
        return all;
    }

    /**
     * A wss:// server's whole pipeline (Pipelines.server, its endpoint played by a handler that
     * closes at the end of input, as Endpoint does) and a TLS client, in memory: after the
     * server's close 1002, the client's close frame, or its close_notify alone, closes it.
     */
    @Test(timeOut = 60_000)
    public void overWssThePeersCloseFrameAndItsCloseNotifyAreRead() throws Exception {
        io.rstreams.testing.TlsFixture tls = io.rstreams.testing.TlsFixture.get();
        for (boolean closeFrame : new boolean[] {true, false}) {
            EmbeddedChannel server = new EmbeddedChannel();
            server.freezeTime(); // the linger's 2 s bound never comes
            Pipelines.server(server.pipeline(), RsioUrl.parse("wss://127.0.0.1:9/rsio"), Pipelines.sslContext(tls.server, false), null,
                    new ChannelInboundHandlerAdapter() {
                        @Override
                        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                            if (evt instanceof io.netty.channel.socket.ChannelInputShutdownEvent) {
                                ctx.close();
                            }
                        }
                    });
            io.netty.handler.ssl.SslHandler clientTls = Pipelines.sslContext(tls.client, true).newHandler(io.netty.buffer.ByteBufAllocator.DEFAULT);
            EmbeddedChannel client = new EmbeddedChannel(clientTls);
            pump(client, server);
            assertTrue(clientTls.handshakeFuture().isSuccess(), String.valueOf(clientTls.handshakeFuture().cause()));
            client.writeOutbound(Unpooled.copiedBuffer(io.rstreams.testing.RawSockets.upgradeRequest(9, "/rsio",
                    List.of("Sec-WebSocket-Protocol: rsio.v0")), java.nio.charset.StandardCharsets.US_ASCII));
            pump(client, server);
            String head = plaintext(client).toString(java.nio.charset.StandardCharsets.US_ASCII);
            assertTrue(head.startsWith("HTTP/1.1 101 "), head);
            client.writeOutbound(Unpooled.wrappedBuffer(new byte[] {(byte) 0x82, 0x03, 1, 2, 3})); // not masked: 1002
            pump(client, server);
            ByteBuf close = plaintext(client);
            assertEquals(close.getUnsignedByte(0), 0x88, "a close frame");
            assertEquals(close.getUnsignedShort(2), 1002);
            close.release();
            assertTrue(server.isOpen(), "lingering");
            if (closeFrame) {
                client.writeOutbound(masked(0x8, new byte[] {0x03, (byte) 0xEA}));
            } else {
                clientTls.closeOutbound();
            }
            pump(client, server);
            assertFalse(server.isOpen(), closeFrame ? "the peer's close frame was read" : "the peer's close_notify was read");
            server.finishAndReleaseAll();
            client.finishAndReleaseAll();
        }
    }

    @Test(timeOut = 60_000)
    public void theLingerEndsPastItsBytes() {
        EmbeddedChannel discarding = upgraded().channel();
        discarding.writeInbound(Unpooled.wrappedBuffer(new byte[] {(byte) 0x82, 0x03, 1, 2, 3}));
        assertEquals(closeStatus(discarding), 1002);
        flood(discarding, Endpoint.LINGER_BYTES + CHUNK);
        assertFalse(discarding.isOpen(), "closed past LINGER_BYTES discarded");
        discarding.finishAndReleaseAll();

        EmbeddedChannel reading = upgraded().channel();
        reading.writeInbound(masked(0x1, new byte[] {'x'}));
        assertEquals(closeStatus(reading), 1003);
        for (long sent = 0; sent <= Endpoint.LINGER_BYTES && reading.isOpen(); sent += 60_000) {
            reading.writeInbound(masked(0x2, new byte[60_000 - 8])); // frames of 60,000 bytes
        }
        assertFalse(reading.isOpen(), "closed past LINGER_BYTES read");
        reading.finishAndReleaseAll();
    }
}
