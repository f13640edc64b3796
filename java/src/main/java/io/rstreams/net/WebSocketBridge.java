package io.rstreams.net;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http.websocketx.BinaryWebSocketFrame;
import io.netty.handler.codec.http.websocketx.CloseWebSocketFrame;
import io.netty.handler.codec.http.websocketx.ContinuationWebSocketFrame;
import io.netty.handler.codec.http.websocketx.CorruptedWebSocketFrameException;
import io.netty.handler.codec.http.websocketx.WebSocketClientProtocolHandler;
import io.netty.handler.codec.http.websocketx.WebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocketServerProtocolHandler;
import io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;

/**
 * RS.io bytes over WebSocket: binary messages in either direction carry the byte stream, with
 * no relation between the two framings (PROTOCOL.md §1). Sits between Netty's WebSocket
 * protocol handler and the {@link Endpoint}: inbound message payloads become plain bytes,
 * outbound bytes become binary messages of at most {@link #MAX_MESSAGE} bytes. The endpoint
 * becomes active only when the opening handshake is done, and a server's {@link HandshakeCheck} then
 * leaves the pipeline. Messages that came before that (sent right behind the upgrade request,
 * which Netty's frame decoder reads as soon as it replaces the HTTP decoder) are held until then.
 * A text message is refused (1003); anything that is not a WebSocket frame never reaches the
 * endpoint (1002).
 */
final class WebSocketBridge extends ChannelDuplexHandler {
    /** The subprotocol both sides offer (RFC 6455 §1.9), as the Python side does. */
    static final String SUBPROTOCOL = "rsio.v0";
    /** Largest message sent: a quarter of common peers' default 1 MiB limit. */
    static final int MAX_MESSAGE = 256 * 1024;

    /** Bytes of the message being received so far (its fragments), against {@link Pipelines#MAX_WS_MESSAGE}. */
    private long receiving;
    /** A message was refused (1003, 1009): what follows it is dropped while the close goes out. */
    private boolean refused;
    /** What was refused before the handshake completed: the close to send then. */
    private Violation pending;
    /** The opening handshake is complete: the endpoint is active and reads what comes. */
    private boolean open;
    /** Message payloads read before the handshake completed, for the endpoint once it is active. */
    private final ArrayDeque<ByteBuf> early = new ArrayDeque<>();

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        // held back until the handshake completes (userEventTriggered)
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof WebSocketServerProtocolHandler.HandshakeComplete
                || evt == WebSocketClientProtocolHandler.ClientHandshakeStateEvent.HANDSHAKE_COMPLETE) {
            HandshakeCheck.leave(ctx.pipeline()); // its work ends with the handshake
            if (evt == WebSocketClientProtocolHandler.ClientHandshakeStateEvent.HANDSHAKE_COMPLETE) {
                Pipelines.clientDecoder(ctx.pipeline()); // its refusals come to Violations, as a server's
            }
            if (pending != null) { // the 101 is out: the close follows it, and nothing is served
                closeLingering(ctx, pending);
                return;
            }
            open = true;
            ctx.fireChannelActive();
            ByteBuf held;
            while ((held = early.poll()) != null) {
                ctx.fireChannelRead(held);
            }
            if (!refused) {
                ctx.fireChannelReadComplete();
            }
            return;
        }
        if (evt instanceof Violation violation) {
            refuse(ctx, violation);
            return;
        }
        ctx.fireUserEventTriggered(evt);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (refused && msg instanceof WebSocketFrame frame) {
            frame.release();
        } else if (msg instanceof BinaryWebSocketFrame || msg instanceof ContinuationWebSocketFrame) {
            WebSocketFrame frame = (WebSocketFrame) msg;
            receiving = (msg instanceof BinaryWebSocketFrame ? 0 : receiving) + frame.content().readableBytes();
            if (receiving > Pipelines.MAX_WS_MESSAGE) { // a message of many frames (one is refused by Netty)
                int size = frame.content().readableBytes();
                frame.release();
                refuse(ctx, new Violation(1009, tooBig(size, receiving - size), true));
                return;
            }
            if (frame.isFinalFragment()) {
                receiving = 0;
            }
            if (open) {
                ctx.fireChannelRead(frame.content().retain());
            } else {
                early.add(frame.content().retain());
            }
            frame.release();
        } else if (msg instanceof WebSocketFrame frame) {
            frame.release();
            refuse(ctx, new Violation(1003, "RS.io uses binary messages", true));
        } else {
            // Netty's frame decoder reads every byte after the upgrade: nothing else is RS.io's (§1)
            ReferenceCountUtil.release(msg);
            refuse(ctx, new Violation(1002, "RS.io over WebSocket is carried in WebSocket frames (PROTOCOL.md §1)", false));
        }
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        release();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        release();
        ctx.fireChannelInactive();
    }

    private void release() {
        ByteBuf held;
        while ((held = early.poll()) != null) {
            held.release();
        }
    }

    /**
     * What is refused, with the close status and reason to send. {@code framesFollow}: the frame
     * decoder still reads frames (the bridge refused a whole frame), so what follows goes through
     * it and the peer's close is seen; otherwise (a frame Netty's decoder refused, which then
     * discards the rest one byte per decoding step, or bytes that are no frame) nothing read
     * after the refusal reaches the decoder.
     */
    record Violation(int status, String reason, boolean framesFollow) {}

    /**
     * Stands where Netty's frame decoder sends what it refuses, ahead of its protocol handler
     * (which would close the channel at once): the bridge sends the close the decoder gives
     * (1002 for bytes that are not a masked frame, 1009 for a frame above the limit), after the
     * handshake's 101 when the bytes came with the request. The decoder is configured not to
     * send it itself: it sits ahead of the frame encoder, which its close would not pass.
     */
    static final class Violations extends ChannelInboundHandlerAdapter {
        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            if (cause instanceof CorruptedWebSocketFrameException refused) {
                ctx.fireUserEventTriggered(new Violation(refused.closeStatus().code(), reason(refused), false));
            } else {
                ctx.fireExceptionCaught(cause);
            }
        }
    }

    /** The section every close reason cites, as rstreams' other refusals cite theirs. */
    private static final String SECTION = " (PROTOCOL.md §1)";
    /** Netty's words for what its frame decoder refuses, and the websockets library's (rstreams' Python side) for each. */
    private static final String[][] WORDS = {
        {"received a frame that is not masked as expected", "incorrect masking"},
        {"RSV != 0 and no extension negotiated", "reserved bits must be 0"},
        {"fragmented control frame", "fragmented control frame"},
        {"control frame with payload length > 125 octets", "control frame too long"},
        {"control frame using reserved opcode", "invalid opcode"},
        {"data frame using reserved opcode", "invalid opcode"},
        {"received close control frame with payload len 1", "close frame too short"},
        {"received continuation data frame outside fragmented message", "unexpected continuation frame"},
        {"received non-continuation data frame while inside fragmented message", "expected a continuation frame"},
        {"Invalid close frame getStatus code", "invalid status code"},
        {"Max frame length of", "frame exceeds limit of " + Pipelines.MAX_WS_MESSAGE + " bytes"},
        // the one UTF-8 check left, text messages being refused whole (1003): rstreams' words for its 1007
        {"bytes are not UTF-8", "a close reason that is not UTF-8"},
    };

    /**
     * The close reason for a frame Netty's decoder refused: what was wrong, in the websockets
     * library's words where it has them (the Python side's close reasons), Netty's otherwise,
     * then the section: {@code incorrect masking (PROTOCOL.md §1)}, {@code frame exceeds limit of
     * 1048576 bytes (PROTOCOL.md §1)}. At most 123 bytes of UTF-8, a close reason's limit (RFC
     * 6455 §5.5): a longer text of Netty's is cut short before the section.
     */
    static String reason(CorruptedWebSocketFrameException refused) {
        String said = refused.getMessage() == null ? refused.closeStatus().reasonText() : refused.getMessage();
        for (String[] words : WORDS) {
            if (said.startsWith(words[0])) {
                return words[1] + SECTION;
            }
        }
        String reason = said + SECTION;
        while (reason.getBytes(StandardCharsets.UTF_8).length > 123) {
            said = said.substring(0, said.offsetByCodePoints(said.length(), -1));
            reason = said + SECTION;
        }
        return reason;
    }

    /**
     * The close reason for a message above {@link Pipelines#MAX_WS_MESSAGE} in several frames, in
     * the websockets library's words: {@code frame with 600000 bytes after reading 600000 bytes
     * exceeds limit of 1048576 bytes (PROTOCOL.md §1)} (101 bytes at most).
     */
    static String tooBig(long frame, long before) {
        return "frame with " + frame + " bytes after reading " + before + " bytes exceeds limit of "
                + Pipelines.MAX_WS_MESSAGE + " bytes" + SECTION;
    }

    /** Closes the WebSocket with the violation's status, without a goodbye: what was refused is not RS.io's to answer (§1). */
    private void refuse(ChannelHandlerContext ctx, Violation violation) {
        if (refused) {
            return;
        }
        refused = true;
        release();
        if (!open) { // came with the upgrade request: the close goes behind the 101, when the handshake completes
            pending = violation;
            return;
        }
        closeLingering(ctx, violation);
    }

    /**
     * Sends the close, then reads what the peer still sends until its close frame or its end of
     * input, within the linger's bounds of PROTOCOL.md §9.1 (2 s, 4 MiB): closing at once, with the
     * rest of a refused message unread, would have the peer reset, and a reset can take the close
     * from it before it is read. The {@link WebSocketLinger} behind TLS does it: after a frame the
     * decoder refused, or bytes that are no frame, nothing read reaches the decoder (which would
     * skip it a byte per step), the linger telling where the frames end itself; after a frame this
     * bridge refused, the decoder still reads frames and this bridge drops them. Either way the
     * channel closes once the peer's close frame has been read, our close written.
     */
    private static void closeLingering(ChannelHandlerContext ctx, Violation violation) {
        Channel channel = ctx.channel();
        WebSocketLinger linger = channel.pipeline().get(WebSocketLinger.class);
        if (linger == null) { // a pipeline built without one (Pipelines puts one in every WebSocket's)
            linger = WebSocketLinger.untracked();
            channel.pipeline().addFirst(linger);
        }
        channel.config().setAutoRead(true); // the endpoint may have stopped reading for its own output
        channel.eventLoop().schedule(() -> channel.close(), Endpoint.LINGER_MILLIS, TimeUnit.MILLISECONDS);
        ChannelFuture sent = ctx.writeAndFlush(new CloseWebSocketFrame(violation.status(), violation.reason()));
        sent.addListener(f -> {
            if (!f.isSuccess()) {
                channel.close();
            }
        });
        linger.linger(channel.pipeline().context(linger), !violation.framesFollow(), sent);
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (!(msg instanceof ByteBuf buf) || msg instanceof WebSocketFrame) {
            ctx.write(msg, promise);
            return;
        }
        if (refused) { // the close is out: nothing follows it (RFC 6455 §5.5.1)
            buf.release();
            promise.trySuccess();
            return;
        }
        int size = buf.readableBytes();
        if (size <= MAX_MESSAGE) {
            // an empty buffer goes down as it is: its promise completes when what precedes it is flushed
            ctx.write(size == 0 ? buf : new BinaryWebSocketFrame(buf), promise);
            return;
        }
        for (int at = 0; at < size; at += MAX_MESSAGE) {
            int len = Math.min(MAX_MESSAGE, size - at);
            boolean last = at + len >= size;
            ByteBuf piece = buf.retainedSlice(buf.readerIndex() + at, len);
            ctx.write(new BinaryWebSocketFrame(piece), last ? promise : ctx.voidPromise());
        }
        buf.release();
    }
}
