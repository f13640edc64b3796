package io.rstreams.net;

import io.rstreams.wire.Credentials;
import io.rstreams.wire.Limits;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletionStage;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Predicate;
import javax.net.ssl.SSLContext;

/**
 * The options {@link RsioClient.Builder} and {@link RsioServer.Builder} share, with their
 * defaults and checks: each builder's methods for them delegate here and return the builder
 * (the idle timeout, whose default differs, stays each builder's).
 */
final class BuilderOptions {
    final Routes routes = new Routes();
    final MessageHandlers messages = new MessageHandlers();
    private Limits limits = Limits.DEFAULT;
    private Duration keepalive = Duration.ofSeconds(15);
    private Duration unreadTimeout = Endpoint.DEFAULT_UNREAD_TIMEOUT;
    private Duration handshakeTimeout = Duration.ofSeconds(10);
    private int threads = 1;
    private SSLContext tls;
    private boolean resume;
    private boolean errorCodes = true;
    /**
     * How long a session's transport may go without a byte read before it is taken for dead, a
     * link that vanished without a reset (§16.7's stall_timeout): the client replaces it, the
     * server drops it and waits for the resume. Keepalive pings (15 s) keep a live link heard.
     * The one place its default, 45 s, is written.
     */
    private Duration stallTimeout = Duration.ofSeconds(45);
    /**
     * The most unacknowledged bytes of this side's stream kept for a replay (§16.4, §16.7's
     * buffer_bytes): production stops there, and what arrives is acknowledged after a quarter of it.
     */
    private long bufferBytes = 4L << 20;
    /** How long after something arrived it is acknowledged, if no acknowledgement went out before (§16.4, rstreams' ack_delay). */
    private Duration ackDelay = Duration.ofMillis(20);

    void resume(boolean on) {
        this.resume = on;
    }

    boolean resume() {
        return resume;
    }

    void errorCodes(boolean on) {
        this.errorCodes = on;
    }

    void keepalive(Duration interval) {
        this.keepalive = interval;
    }

    int threads() {
        return threads;
    }

    SSLContext tls() {
        return tls;
    }

    void limits(Limits limits) {
        this.limits = Objects.requireNonNull(limits, "limits");
    }

    void tls(SSLContext context) {
        this.tls = Objects.requireNonNull(context, "context");
    }

    void handshakeTimeout(Duration timeout) {
        if (timeout != null && (timeout.isNegative() || timeout.isZero())) {
            throw new IllegalArgumentException("handshakeTimeout must be > 0 (null: no limit), got " + timeout);
        }
        this.handshakeTimeout = timeout;
    }

    void unreadTimeout(Duration timeout) {
        if (timeout != null && (timeout.isNegative() || timeout.isZero())) {
            throw new IllegalArgumentException("unreadTimeout must be > 0 (null: no limit), got " + timeout);
        }
        this.unreadTimeout = timeout;
    }

    void stallTimeout(Duration timeout) {
        if (timeout != null && (timeout.isNegative() || timeout.isZero())) {
            throw new IllegalArgumentException("stallTimeout must be > 0 (null: off), got " + timeout);
        }
        this.stallTimeout = timeout;
    }

    Duration stallTimeout() {
        return stallTimeout;
    }

    void bufferBytes(long bytes) {
        if (bytes < 4096) {
            throw new IllegalArgumentException("bufferBytes must be >= 4096, got " + bytes); // rstreams' least buffer_bytes
        }
        this.bufferBytes = bytes;
    }

    void ackDelay(Duration delay) {
        if (delay == null || delay.isNegative()) {
            throw new IllegalArgumentException("ackDelay must be >= 0 (zero: at once), got " + delay);
        }
        this.ackDelay = delay;
    }

    /**
     * The resume options of an endpoint, when {@link #resume()} is on: this side's replay buffer,
     * stall timeout and acknowledgement delay, with a server's {@code sessionTimeout} and
     * {@code sessions} or a client's {@code reconnector}.
     */
    Endpoint.ResumeOptions resumeOptions(Duration sessionTimeout, Endpoint.Sessions sessions, Endpoint.Reconnector reconnector) {
        return new Endpoint.ResumeOptions(bufferBytes, sessionTimeout, sessions, reconnector, stallTimeout, ackDelay);
    }

    void threads(int threads) {
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be >= 1, got " + threads);
        }
        this.threads = threads;
    }

    void handler(String pattern, Consumer<Message> handler) {
        Objects.requireNonNull(handler, "handler");
        messages.add(Objects.requireNonNull(pattern, "pattern"), m -> {
            handler.accept(m);
            return null;
        });
    }

    void asyncHandler(String pattern, Function<Message, ? extends CompletionStage<?>> handler) {
        Objects.requireNonNull(handler, "handler");
        messages.add(Objects.requireNonNull(pattern, "pattern"), handler::apply);
    }

    void maxMessagesInFlight(int messages) {
        this.messages.window(messages);
    }

    /** The endpoint's options from these and the side's own ({@code idleTimeout}'s default is the side's). */
    Endpoint.Options endpoint(Duration idleTimeout, Credentials credentials, Predicate<Credentials> authenticator, io.rstreams.wire.Authorizer authorizer,
            Endpoint.ResumeOptions resumeOptions) {
        return new Endpoint.Options(limits, routes, keepalive, idleTimeout, unreadTimeout, credentials, authenticator, authorizer,
                resumeOptions, handshakeTimeout, errorCodes, messages);
    }
}
