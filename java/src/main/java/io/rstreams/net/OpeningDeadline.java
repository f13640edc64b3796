package io.rstreams.net;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * One bound on a client's whole opening, as rstreams' connect has with its handshake_timeout:
 * from the pipeline's start (before the TCP connect) until the transport is up, past its TLS and
 * WebSocket handshakes, which is when channelActive reaches this handler, right ahead of the
 * endpoint. An opening still under way when it passes is closed, and {@link #expired()} says
 * why. The TLS and WebSocket handlers then have no bounds of their own, so that a slow TLS
 * handshake does not leave the upgrade a whole bound more.
 */
final class OpeningDeadline extends ChannelInboundHandlerAdapter {
    private final Duration bound;
    private ScheduledFuture<?> timer;
    private volatile boolean expired;

    OpeningDeadline(Duration bound) {
        this.bound = bound;
    }

    /** Whether the bound passed before the transport was up (and the channel was closed for it). */
    boolean expired() {
        return expired;
    }

    /** The bound, in seconds as the error says it ({@code 0.3}, {@code 10}; Python's :g). */
    String seconds() {
        return PythonG.seconds(bound);
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        timer = ctx.executor().schedule(() -> {
            expired = true;
            ctx.channel().close();
        }, bound.toNanos(), TimeUnit.NANOSECONDS);
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        ctx.pipeline().remove(this); // the transport is up: the opening is over
        ctx.fireChannelActive();
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        if (timer != null) {
            timer.cancel(false);
        }
    }
}
