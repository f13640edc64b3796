package io.rstreams.net;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.rstreams.wire.ProtocolException;
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
    private final ResumeFrames.AnswerReader reader = new ResumeFrames.AnswerReader();
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
        ResumeFrames.Answer answer;
        try {
            answer = reader.read(pending);
        } catch (ProtocolException e) {
            // a malformed or unexpected answer: the server broke the protocol, and would again on
            // the next attempt, so the session fails now, in rstreams' words (§16.2, §16.6)
            refused(ctx, "the session could not be resumed: " + e.getMessage());
            return;
        }
        if (answer == null) {
            return;
        }
        if (answer.refused() != null) { // resumeRefused, or a goodbye (a server at its connection limit, say)
            refused(ctx, "the server refused to resume the session: " + answer.refused());
            return;
        }
        ByteBuf rest = pending;
        pending = null;
        timeout.cancel(false);
        ctx.pipeline().remove(this);
        session.attach(ctx.pipeline().context(session), answer.position(), false, rest);
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
