package io.rstreams.net;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http.websocketx.BinaryWebSocketFrame;
import io.netty.handler.codec.http.websocketx.CloseWebSocketFrame;
import io.netty.handler.codec.http.websocketx.ContinuationWebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocketClientProtocolHandler;
import io.netty.handler.codec.http.websocketx.WebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocketServerProtocolHandler;

/**
 * RS.io bytes over WebSocket: binary messages in either direction carry the byte stream, with
 * no relation between the two framings (PROTOCOL.md §1). Sits between Netty's WebSocket
 * protocol handler and the {@link Endpoint}: inbound message payloads become plain bytes,
 * outbound bytes become binary messages of at most {@link #MAX_MESSAGE} bytes. The endpoint
 * becomes active only when the opening handshake is done, and a server's {@link HandshakeCheck} then
 * leaves the pipeline. A text message is refused (1003).
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

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        // held back until the handshake completes (userEventTriggered)
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof WebSocketServerProtocolHandler.HandshakeComplete
                || evt == WebSocketClientProtocolHandler.ClientHandshakeStateEvent.HANDSHAKE_COMPLETE) {
            HandshakeCheck.leave(ctx.pipeline()); // its work ends with the handshake
            ctx.fireChannelActive();
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
                frame.release();
                refuse(ctx, 1009, "RS.io messages are at most " + Pipelines.MAX_WS_MESSAGE + " bytes (PROTOCOL.md §1)");
                return;
            }
            if (frame.isFinalFragment()) {
                receiving = 0;
            }
            ctx.fireChannelRead(frame.content().retain());
            frame.release();
        } else if (msg instanceof WebSocketFrame frame) {
            frame.release();
            refuse(ctx, 1003, "RS.io uses binary messages");
        } else {
            ctx.fireChannelRead(msg);
        }
    }

    /** Closes the WebSocket with {@code status}, without a goodbye: what was refused is not RS.io's to answer (§1). */
    private void refuse(ChannelHandlerContext ctx, int status, String reason) {
        refused = true;
        ctx.writeAndFlush(new CloseWebSocketFrame(status, reason)).addListener(f -> ctx.close());
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
