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
    private volatile boolean timedOut;
    /** Why an attempt whose transport ended failed, unless it timed out. */
    static final String ENDED = "the transport ended during the resume exchange";

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
            timedOut = true;
            ctx.channel().close();
        }, ResumeFrames.ATTEMPT_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
    }

    boolean timedOut() {
        return timedOut;
    }

    /** Why this attempt failed, once its transport is closed: its timeout, or its end. */
    String failure() {
        return timedOut ? "no answer to resume within " + ResumeFrames.ATTEMPT_TIMEOUT_MILLIS / 1000 + " s" : ENDED;
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
                int end = ResumeFrames.helloEnd(pending);
                if (end < 0) {
                    return;
                }
                pending.readerIndex(end);
                helloSeen = true;
            }
            if (pending.isReadable() && pending.getByte(pending.readerIndex()) == FrameType.GOODBYE) {
                // a goodbye instead of the answer (a server at its connection limit, say): a refusal, as rstreams reads it
                String reason = ResumeFrames.goodbyeReason(pending);
                if (reason != null) {
                    refused(ctx, "the server refused to resume the session: " + reason);
                }
                return;
            }
            byte[][] message = ResumeFrames.take(pending);
            if (message == null) {
                return;
            }
            int type = message[0][0] & 0xFF;
            if (type == FrameType.RESUMED) {
                long position = ResumeFrames.position(message[1], "resumed");
                ByteBuf rest = pending;
                pending = null;
                timeout.cancel(false);
                ctx.pipeline().remove(this);
                session.attach(ctx.pipeline().context(session), position, false, rest);
            } else {
                // rstreams' words (§16.6)
                refused(ctx, type == FrameType.RESUME_REFUSED
                        ? "the server refused to resume the session: " + new String(message[1], StandardCharsets.UTF_8)
                        : String.format("expected resumed or resumeRefused, got type 0x%02x (PROTOCOL.md §16.3)", type));
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

    /** The session fails with {@code reason}, and this transport is closed without a word. */
    private void refused(ChannelHandlerContext ctx, String reason) {
        pending.release();
        pending = null;
        timeout.cancel(false);
        ctx.close();
        session.sessionFailed(reason);
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
