package io.rstreams.net;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.rstreams.wire.FrameType;
import io.rstreams.wire.ProtocolException;

/**
 * The first handler of a server transport when extension resume is on (PROTOCOL.md §16.3): if
 * the first byte is a resume (0x89), the transport continues an existing session and the fresh
 * endpoint behind this handler (whose hello was the transport's hello) is replaced by the
 * session's; otherwise this handler steps aside and announces the fresh endpoint's session.
 */
final class ResumeSniffer extends ChannelInboundHandlerAdapter {
    private final Endpoint fresh;
    private final java.util.function.Function<byte[], Endpoint> sessions;
    private final Runnable announce;
    private ByteBuf pending;

    ResumeSniffer(Endpoint fresh, java.util.function.Function<byte[], Endpoint> sessions, Runnable announce) {
        this.fresh = fresh;
        this.sessions = sessions;
        this.announce = announce;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        ByteBuf in = (ByteBuf) msg;
        if (pending == null && fresh.closedError() != null) {
            // the fresh endpoint said goodbye before the first byte came (a server closing, §9.1):
            // nothing more is answered on this transport, whatever the byte; the endpoint discards
            ctx.pipeline().remove(this);
            ctx.fireChannelRead(in);
            return;
        }
        if (pending == null && in.isReadable() && (in.getByte(in.readerIndex()) & 0xFF) != FrameType.RESUME) {
            ctx.pipeline().remove(this);
            announce.run();
            ctx.fireChannelRead(in);
            return;
        }
        pending = pending == null ? in : Unpooled.wrappedBuffer(pending, in);
        byte[][] message;
        try {
            message = ResumeFrames.take(pending);
            if (message == null) {
                return;
            }
            Object[] tp = ResumeFrames.tokenAndPosition(message[1]);
            Endpoint session = sessions.apply((byte[]) tp[0]);
            ByteBuf rest = pending;
            pending = null;
            if (session == null) {
                rest.release();
                ctx.writeAndFlush(Unpooled.wrappedBuffer(ResumeFrames.refused(
                        "unknown or expired session token (PROTOCOL.md §16.3)"))).addListener(ChannelFutureListener.CLOSE);
                return;
            }
            if (rest.isReadable()) {
                // the client sent more than its resume before reading resumed: the stream it sent is
                // not one the session can take, and the session fails with it (§16.3)
                rest.release();
                Runnable fail = () -> session.sessionFailed("the client sent bytes before the resume was answered (PROTOCOL.md §16.3)");
                if (session.loop().inEventLoop()) {
                    fail.run();
                } else {
                    session.loop().execute(fail);
                }
                ctx.writeAndFlush(Unpooled.wrappedBuffer(ResumeFrames.refused(
                        "bytes after resume, before resumed (PROTOCOL.md §16.3)"))).addListener(ChannelFutureListener.CLOSE);
                return;
            }
            long position = (Long) tp[1];
            Runnable move = () -> {
                fresh.retire();
                ctx.pipeline().replace(fresh, "rsio-session", session);
                ctx.pipeline().remove(this);
                session.attach(ctx.pipeline().context(session), position, true, rest);
            };
            if (session.loop().inEventLoop()) {
                move.run();
            } else {
                rest.release();
                ctx.writeAndFlush(Unpooled.wrappedBuffer(ResumeFrames.refused(
                        "the session lives on another I/O thread of this server (PROTOCOL.md §16.3)"))).addListener(ChannelFutureListener.CLOSE);
            }
        } catch (ProtocolException e) {
            if (pending != null) {
                pending.release();
                pending = null;
            }
            ctx.writeAndFlush(Unpooled.wrappedBuffer(ResumeFrames.refused(e.getMessage()))).addListener(ChannelFutureListener.CLOSE);
        }
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) throws Exception {
        if (evt instanceof ChannelInputShutdownEvent && pending != null) {
            // a resume cut short (anything else was decided at its first byte): §9.3's truncated
            // message, refused in rstreams' words, and the transport ends at once
            int n = pending.readableBytes();
            pending.release();
            pending = null;
            ctx.writeAndFlush(Unpooled.wrappedBuffer(ResumeFrames.refused("input ended inside resume (" + n
                    + " bytes of an incomplete message) (PROTOCOL.md §9.3)"))).addListener(ChannelFutureListener.CLOSE);
            return;
        }
        super.userEventTriggered(ctx, evt);
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        if (pending != null) {
            pending.release();
            pending = null;
        }
    }
}
