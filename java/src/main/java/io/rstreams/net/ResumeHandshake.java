package io.rstreams.net;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.rstreams.wire.FrameType;
import io.rstreams.wire.ProtocolException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * A client's new transport for an existing session (PROTOCOL.md §16.3): sends resume(token,
 * position) first, reads the server's hello (not part of either stream) and resumed or
 * resumeRefused, then hands the transport to the session's endpoint.
 */
final class ResumeHandshake extends ChannelInboundHandlerAdapter {
    private final Endpoint session;
    private ByteBuf pending;
    private boolean helloSeen;
    private ScheduledFuture<?> timeout;

    ResumeHandshake(Endpoint session) {
        this.session = session;
    }

    /**
     * Starts the attempt's clock when the transport's pipeline is built, as rstreams'
     * {@code attempt_timeout} bounds a whole attempt (§16.7): the TCP connect and a TLS or
     * WebSocket opening handshake count too, so a new transport that stalls in them (a server
     * that accepts and never answers the upgrade) is closed and the next attempt made, as is one
     * whose answer to resume does not come.
     */
    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        timeout = ctx.executor().schedule(() -> {
            ctx.channel().close();
        }, ResumeFrames.ATTEMPT_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
    }

    /** The transport is up, its TLS and WebSocket handshakes done: resume is its first message (§16.3). */
    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        Replay r = session.replay();
        ctx.writeAndFlush(Unpooled.wrappedBuffer(ResumeFrames.resume(r.token, r.receivedPosition())));
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        ByteBuf in = (ByteBuf) msg;
        pending = pending == null ? in : Unpooled.wrappedBuffer(pending, in);
        try {
            if (!helloSeen) {
                if (!skipHello(pending)) {
                    return;
                }
                helloSeen = true;
            }
            byte[][] message = ResumeFrames.take(pending);
            if (message == null) {
                return;
            }
            int type = message[0][0] & 0xFF;
            ByteBuf rest = pending;
            pending = null;
            timeout.cancel(false);
            if (type == FrameType.RESUMED) {
                long position = ResumeFrames.position(message[1], "resumed");
                ctx.pipeline().remove(this);
                session.attach(ctx.pipeline().context(session), position, false, rest);
            } else {
                rest.release();
                ctx.close();
                session.sessionFailed(type == FrameType.RESUME_REFUSED
                        ? "the server refused to resume the session: " + new String(message[1], StandardCharsets.UTF_8)
                        : String.format("expected resumed or resumeRefused, got message type 0x%02x (PROTOCOL.md §16.3)", type));
            }
        } catch (ProtocolException e) {
            if (pending != null) {
                pending.release();
                pending = null;
            }
            ctx.close();
            session.sessionFailed(e.getMessage());
        }
    }

    /** Moves past the server's hello if it is all here (version 0, §4.1); false if more bytes are needed. */
    private static boolean skipHello(ByteBuf in) throws ProtocolException {
        int start = in.readerIndex();
        int n = in.readableBytes();
        if (n < 3) {
            return false;
        }
        if (in.getByte(start) != FrameType.SERVER_HELLO || in.getByte(start + 1) != 0) {
            throw new ProtocolException("a resumed transport must start with a version-0 serverHello (PROTOCOL.md §16.3)");
        }
        byte[] rest = new byte[n - 2];
        in.getBytes(start + 2, rest);
        int at = 0;
        long count = 0;
        int shift = 0;
        while (true) {
            if (at >= rest.length) {
                return false;
            }
            int x = rest[at++] & 0xFF;
            count |= (long) (x & 0x7F) << shift;
            shift += 7;
            if (x < 0x80) {
                break;
            }
            if (shift > 63) {
                throw new ProtocolException("an over-long varint in the serverHello (PROTOCOL.md §2.1)");
            }
        }
        for (long i = 0; i < count; i++) {
            do {
                if (at >= rest.length) {
                    return false;
                }
            } while ((rest[at++] & 0x80) != 0);
        }
        in.readerIndex(start + 2 + at);
        return true;
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        if (timeout != null) {
            timeout.cancel(false);
        }
        if (pending != null) {
            pending.release();
            pending = null;
        }
    }
}
