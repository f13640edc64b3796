package io.rstreams.net;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.handler.codec.http.websocketx.PingWebSocketFrame;
import java.io.IOException;

/**
 * Bounds the pongs unsent to a WebSocket peer (PROTOCOL.md §6.3). Netty's WebSocket protocol
 * handler answers each ping itself and asks for the next read even when reading is paused, so
 * a peer that pings and never reads would grow the pongs unsent without bound. Sits in front
 * of that handler: a ping that arrives while more than {@link Endpoint#MAX_UNSENT} bytes are
 * unsent ends the connection, without a goodbye (the peer reads nothing), as the Python and
 * JavaScript bindings do.
 */
final class PongLimit extends ChannelInboundHandlerAdapter {
    static final String REASON = "more than " + Endpoint.MAX_UNSENT
            + " bytes unsent to a peer that pings and does not read (MAX_UNSENT, PROTOCOL.md §6.3)";

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof PingWebSocketFrame ping) {
            ChannelOutboundBuffer buffer = ctx.channel().unsafe().outboundBuffer();
            if (buffer != null && buffer.totalPendingWriteBytes() > Endpoint.MAX_UNSENT) {
                ping.release();
                ctx.fireExceptionCaught(new IOException(REASON));
                ctx.close();
                return;
            }
        }
        ctx.fireChannelRead(msg);
    }
}
