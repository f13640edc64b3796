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
        if (msg instanceof BinaryWebSocketFrame || msg instanceof ContinuationWebSocketFrame) {
            WebSocketFrame frame = (WebSocketFrame) msg;
            ctx.fireChannelRead(frame.content().retain());
            frame.release();
        } else if (msg instanceof WebSocketFrame frame) {
            frame.release();
            ctx.writeAndFlush(new CloseWebSocketFrame(1003, "RS.io uses binary messages")).addListener(f -> ctx.close());
        } else {
            ctx.fireChannelRead(msg);
        }
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (!(msg instanceof ByteBuf buf) || msg instanceof WebSocketFrame) {
            ctx.write(msg, promise);
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
