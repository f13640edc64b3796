package io.rstreams.net;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.util.concurrent.GlobalEventExecutor;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.rstreams.wire.Connection;
import io.rstreams.wire.Credentials;
import io.rstreams.wire.Limits;
import io.netty.handler.ssl.SslContext;
import java.io.IOException;
import java.time.Duration;
import javax.net.ssl.SSLContext;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Flow;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.CompletionStage;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * Connects to RS.io servers. One client owns its I/O threads (daemon threads) and any number
 * of connections; closing it says goodbye on each of them (PROTOCOL.md §9.1), then stops its threads.
 *
 * <pre>{@code
 * try (RsioClient client = RsioClient.builder().build();
 *      RsioConnection conn = client.connect("tcp://127.0.0.1:9000").get()) {
 *     Flow.Publisher<String> counter = conn.publisher("counter?from=1&to=6", Codec.UTF8);
 *     counter.subscribe(mySubscriber);
 * }
 * }</pre>
 */
public final class RsioClient implements AutoCloseable {
    private final EventLoopGroup group;
    private final Endpoint.Options options;
    private final SSLContext tls;
    /** The options of extension resume (its reconnector aside), or null without it. */
    private final BuilderOptions resume;
    /** Every connection not yet over, with the I/O thread it lives on: close() says goodbye to each. */
    private final Map<Endpoint, EventLoop> endpoints = new ConcurrentHashMap<>();
    private final AtomicBoolean closing = new AtomicBoolean();
    /** Every open transport, resumed ones included: close() closes what its goodbyes left open. */
    private final ChannelGroup channels = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);

    private RsioClient(Builder b) {
        this.group = new MultiThreadIoEventLoopGroup(b.options.threads(), new DefaultThreadFactory("rstreams-client", true),
                Transport.ioHandler());
        this.options = b.options.endpoint(b.idleTimeout, b.credentials, null, null, null);
        this.resume = b.options.resume() ? b.options : null;
        try {
            this.tls = b.options.tls() != null ? b.options.tls() : SSLContext.getDefault();
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException("no default TLS context in this JVM", e);
        }
    }

    /** A builder with the defaults: one I/O thread, PROTOCOL.md §11 limits, pings after 15 s of silence. */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Opens a connection to {@code url}: {@code tcp://host:port}, {@code tls://host:port},
     * {@code ws://host:port/path}, {@code wss://host:port/path} or {@code unix:///path/to/socket}. The future completes once the
     * transport is up (after the TLS and WebSocket handshakes); subscriptions may start at once
     * (PROTOCOL.md §4.3). TLS verifies the server's certificate and that it names the host.
     *
     * @throws IllegalArgumentException if the URL is malformed or its scheme is not supported
     */
    public CompletableFuture<RsioConnection> connect(String url) {
        RsioUrl u = RsioUrl.parse(url);
        SslContext ssl = u.secure() ? Pipelines.sslContext(tls, true) : null;
        Endpoint.Options opts = options;
        if (resume != null) {
            Endpoint.Reconnector again = (session, attempt) -> {
                // the attempt's opening is bounded by its attempt_timeout, ResumeHandshake's, as rstreams' (§16.7)
                ResumeHandshake handshake = new ResumeHandshake(session);
                ChannelFuture f = bootstrap(session.loop(), u, ssl, null, handshake, session).connect(u.address());
                channels.add(f.channel());
                f.addListener(done -> {
                    if (!done.isSuccess()) { // the connect failed, or the attempt's timeout closed it first
                        Throwable cause = done.cause();
                        session.attemptFailed(handshake.timedOut() ? handshake.failure()
                                : cause.getMessage() != null ? cause.getMessage() : cause.getClass().getSimpleName());
                    }
                });
            };
            opts = new Endpoint.Options(options.limits(), options.routes(), options.keepalive(), options.idleTimeout(), options.unreadTimeout(),
                    options.credentials(), null, null, resume.resumeOptions(null, null, again), options.handshakeTimeout(),
                    options.errorCodes(), options.messages());
        }
        Endpoint endpoint = new Endpoint(Connection.Side.CLIENT, opts);
        CompletableFuture<RsioConnection> result = new CompletableFuture<>();
        // tls://, ws://, wss://: the handshake timeout bounds the whole opening, TCP connect included, as rstreams'
        OpeningDeadline opening = options.handshakeTimeout() != null && (u.secure() || u.websocket())
                ? new OpeningDeadline(options.handshakeTimeout()) : null;
        ChannelFuture f = bootstrap(group, u, ssl, opening, endpoint).connect(u.address());
        channels.add(f.channel());
        endpoints.put(endpoint, f.channel().eventLoop()); // resumed transports use the same thread (Endpoint.loop())
        endpoint.closedFuture().whenComplete((v, e) -> endpoints.remove(endpoint));
        f.addListener(done -> {
            if (!done.isSuccess()) {
                endpoints.remove(endpoint); // never up: nothing to say goodbye on
                result.completeExceptionally(opening != null && opening.expired() ? openingTimedOut(url, u, opening)
                        : new IOException("can't connect to " + url + ": " + done.cause().getMessage(), done.cause()));
            }
        });
        endpoint.activeFuture().whenComplete((conn, error) -> {
            if (error == null) {
                result.complete(conn);
            } else if (opening != null && opening.expired()) {
                result.completeExceptionally(openingTimedOut(url, u, opening));
            } else {
                result.completeExceptionally(new IOException("can't connect to " + url + ": the "
                        + (u.secure() ? "TLS " : "") + (u.websocket() ? "WebSocket " : "") + "handshake failed", error));
            }
        });
        return result;
    }

    /** The error of an opening that took the handshake timeout, naming its steps as rstreams' does. */
    private static IOException openingTimedOut(String url, RsioUrl u, OpeningDeadline opening) {
        String steps = "TCP connect" + (u.secure() ? ", TLS handshake" : "") + (u.websocket() ? ", HTTP upgrade" : "");
        return new IOException("can't connect to " + url + ": it did not finish the opening (" + steps + ") within "
                + opening.seconds() + " s (RsioClient.Builder.handshakeTimeout); it may not be an RS.io server");
    }

    private static Bootstrap bootstrap(EventLoopGroup group, RsioUrl u, SslContext ssl, OpeningDeadline opening,
            io.netty.channel.ChannelHandler... last) {
        Bootstrap b = new Bootstrap()
                .group(group)
                .channel(Transport.channel(u.unix()))
                // the system's own bound on a TCP connect, shortened to 10 s; none of its own within an opening's bound
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, opening != null ? 0 : 10_000)
                .handler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        Pipelines.client(ch.pipeline(), u, ssl, opening, last);
                    }
                });
        if (Transport.halfCloses(u.unix())) {
            b.option(ChannelOption.ALLOW_HALF_CLOSURE, true);
        }
        return u.unix() ? b : b.option(ChannelOption.TCP_NODELAY, true);
    }

    /**
     * Says goodbye on every connection of this client, as {@link RsioConnection#close()} does
     * (code 0, normal; the peers' answers awaited all at once, five seconds at most in all, as
     * rstreams' CLOSE_TIMEOUT), then closes whatever is left and stops the I/O threads. Streams
     * end with {@link ConnectionClosedException}. Idempotent; {@link #close(Duration)} bounds the
     * wait otherwise.
     */
    @Override
    public void close() {
        close(Duration.ofMillis(Endpoint.CLOSE_MILLIS));
    }

    /**
     * {@link #close()}, waiting at most {@code wait} for the peers' answers (as rstreams'
     * {@code Connection.aclose(timeout=...)}), and never longer than the five seconds after
     * which each connection closes its transport anyway; {@code Duration.ZERO} ends at once: the
     * goodbyes are written but no answer is awaited, and the transports are closed. A second call only
     * waits for the I/O threads to stop. Called on one of this client's I/O threads (from a
     * subscriber's callback, say), it starts all that and returns at once: the thread cannot
     * wait for work that it has to do itself once the callback returns.
     */
    public void close(Duration wait) {
        if (wait == null || wait.isNegative()) {
            throw new IllegalArgumentException("close(wait) needs a wait >= 0 (Duration.ZERO: no wait), got " + wait);
        }
        Duration most = Duration.ofMillis(Endpoint.CLOSE_MILLIS);
        Duration bounded = wait.compareTo(most) < 0 ? wait : most;
        if (closing.compareAndSet(false, true)) {
            goodbyes(bounded).whenComplete((v, e) -> stop());
        }
        if (onIoThread()) {
            return;
        }
        try {
            group.terminationFuture().await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // the wait ends, and is kept: what is left is closed now
            stop();
            group.terminationFuture().awaitUninterruptibly();
        }
    }

    /**
     * Says goodbye on every connection, each on its own I/O thread; completes once all are
     * answered, {@code wait} after they are all written (every goodbye is written before any
     * transport is closed, even without a wait), or after the close timeout.
     */
    private CompletableFuture<Void> goodbyes(Duration wait) {
        List<CompletableFuture<Void>> written = new ArrayList<>();
        List<CompletableFuture<Void>> answered = new ArrayList<>();
        endpoints.forEach((endpoint, loop) -> {
            CompletableFuture<Void> out = new CompletableFuture<>();
            CompletableFuture<Void> over = new CompletableFuture<>();
            written.add(out);
            answered.add(over);
            try {
                loop.execute(() -> {
                    try {
                        endpoint.closeOrderly("").whenComplete((v, e) -> over.complete(null));
                    } finally {
                        out.complete(null); // the goodbye is flushed
                    }
                });
            } catch (RejectedExecutionException e) {
                out.complete(null);
                over.complete(null);
            }
        });
        return all(written, Duration.ofMillis(Endpoint.CLOSE_MILLIS)).thenCompose(v -> all(answered, wait));
    }

    /** Closes whatever did not answer in time and stops the I/O threads, without waiting (idempotent). */
    private void stop() {
        channels.close();
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS);
    }

    private boolean onIoThread() {
        for (io.netty.util.concurrent.EventExecutor loop : group) {
            if (loop.inEventLoop()) {
                return true;
            }
        }
        return false;
    }

    /** Completes once all of {@code futures} have, or after {@code most}. */
    private static CompletableFuture<Void> all(List<CompletableFuture<Void>> futures, Duration most) {
        return CompletableFuture.allOf(futures.toArray(new CompletableFuture<?>[0]))
                .completeOnTimeout(null, most.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Options of a {@link RsioClient}. */
    public static final class Builder {
        private final BuilderOptions options = new BuilderOptions();
        private Duration idleTimeout;
        private Credentials credentials;

        private Builder() {}

        /**
         * Offers extension resume (PROTOCOL.md §16): when the server agrees, a broken transport is
         * replaced (up to 8 attempts, backoff from 50 ms to 2 s) and streams only see a pause;
         * unacknowledged output is kept for the replay up to {@link #bufferBytes} (4 MiB), and
         * production pauses there.
         */
        public Builder resume(boolean on) {
            options.resume(on);
            return this;
        }

        /**
         * With {@link #resume resume(true)}: a transport on which nothing was read for this long
         * is taken for dead, a link that vanished without a reset (PROTOCOL.md §16.7's
         * stall_timeout), and the client replaces it. Keepalive's pings (15 s) keep a live link heard. Default 45 s,
         * as rstreams'; null: off, a silent transport is kept until it ends.
         *
         * @throws IllegalArgumentException naming {@code stallTimeout} if it is zero or negative
         */
        public Builder stallTimeout(Duration timeout) {
            options.stallTimeout(timeout);
            return this;
        }

        /**
         * With {@link #resume resume(true)}: the most bytes of this side's stream kept for a replay,
         * sent and not yet acknowledged by the server (PROTOCOL.md §16.4, §16.7's buffer_bytes):
         * production stops there until acknowledgements bring it under half, and this side
         * acknowledges what it receives once a quarter of this much has arrived. Default 4 MiB, as rstreams'.
         *
         * @throws IllegalArgumentException naming {@code bufferBytes} if it is below 4096 (as rstreams' minimum)
         */
        public Builder bufferBytes(long bytes) {
            options.bufferBytes(bytes);
            return this;
        }

        /**
         * With {@link #resume resume(true)}: how long after something arrived from the server it is
         * acknowledged, if no acknowledgement went out meanwhile (PROTOCOL.md §16.4, rstreams'
         * ack_delay); a quarter of {@link #bufferBytes} arriving is acknowledged at once. Default 20 ms,
         * as rstreams'; zero: at the next turn of the I/O thread.
         *
         * @throws IllegalArgumentException naming {@code ackDelay} if it is null or negative
         */
        public Builder ackDelay(Duration delay) {
            options.ackDelay(delay);
            return this;
        }

        /**
         * Offers extension error-codes (PROTOCOL.md §19), as every connection does by default: when
         * the server offers it too, a code of §19.2 travels beside the text of each onError and
         * goodbye. {@code false} withholds it (as rstreams'
         * {@code ConnectionConfig(disabled_extensions=frozenset({6}))}), to behave like a client
         * that predates it: no errorCode or goodbyeCode goes out, and one received is a protocol
         * violation (§4.4); received errors have no code.
         */
        public Builder errorCodes(boolean on) {
            options.errorCodes(on);
            return this;
        }

        /** Whom to trust (and which client certificate to present) on {@code tls://} and {@code wss://}; default: the JVM's trust store. */
        public Builder tls(SSLContext context) {
            options.tls(context);
            return this;
        }

        /** What this end accepts from servers (PROTOCOL.md §11). */
        public Builder limits(Limits limits) {
            options.limits(limits);
            return this;
        }

        /** Ping after this much silence (PROTOCOL.md §14); null: never ping. Default 15 s. */
        public Builder keepalive(Duration interval) {
            options.keepalive(interval);
            return this;
        }

        /** Close a connection on which nothing arrived for this long (§14.2); default: never. */
        public Builder idleTimeout(Duration timeout) {
            this.idleTimeout = timeout;
            return this;
        }

        /**
         * Say goodbye to a server whose serverHello has not come this long after the transport
         * is up (after the TLS and WebSocket handshakes; PROTOCOL.md §4.1): its subscriptions
         * fail with {@code handshake timeout (no serverHello within N s): the server did not say
         * hello (RsioClient.Builder.handshakeTimeout)} (the goodbye's reason is the part before
         * the colon). Only the first transport's hello: a resume is bounded by its own
         * attempts. Default 10 s, as rstreams' handshake_timeout; null: no limit. It bounds a
         * {@code tls://}, {@code ws://} or {@code wss://} connection's opening too, as rstreams'
         * connect does: one bound on the TCP connect, TLS handshake and HTTP upgrade together, from
         * {@link RsioClient#connect} until the transport is up; an opening that takes longer fails
         * the connect with an IOException, {@code can't connect to URL: it did not finish the
         * opening (TCP connect, TLS handshake, HTTP upgrade) within N s
         * (RsioClient.Builder.handshakeTimeout); it may not be an RS.io server}.
         */
        public Builder handshakeTimeout(Duration timeout) {
            options.handshakeTimeout(timeout);
            return this;
        }

        /**
         * Say goodbye to a peer that leaves our replies unread this long (§6.3): past
         * {@value Endpoint#LOW_WATER} bytes of unsent replies the peer is no longer read until it
         * reads them, and this bounds how long; null: no limit (only the idle timeout and the
         * 16 MiB cap on unsent bytes hold). Default 30 s, as rstreams' unread_timeout.
         */
        public Builder unreadTimeout(Duration timeout) {
            options.unreadTimeout(timeout);
            return this;
        }

        /** Authenticate every connection with this token (extension auth, PROTOCOL.md §15). */
        public Builder token(String token) {
            return credentials(Credentials.token(Objects.requireNonNull(token, "token")));
        }

        /**
         * Authenticate every connection with a user name and password (extension auth, credentials
         * of kind 2, PROTOCOL.md §15.1); send them over {@code tls://} or {@code wss://} only.
         */
        public Builder userPassword(String user, String password) {
            return credentials(Credentials.userPassword(Objects.requireNonNull(user, "user"),
                    Objects.requireNonNull(password, "password")));
        }

        /** Authenticate every connection with these credentials (a token, or a user and password). */
        public Builder credentials(Credentials credentials) {
            this.credentials = Objects.requireNonNull(credentials, "credentials");
            return this;
        }

        /** I/O threads (default 1). */
        public Builder threads(int threads) {
            options.threads(threads);
            return this;
        }

        /**
         * Also serve {@code pattern} to the servers this client connects to (bidirectional, PROTOCOL.md §1),
         * as {@link RsioServer.Builder#route} serves it.
         *
         * @throws NullPointerException for a null pattern or factory, as {@code route} does
         */
        public Builder serve(String pattern, Function<PublisherRequest, Flow.Publisher<byte[]>> factory) {
            options.routes.add(new Routes.Route(Objects.requireNonNull(pattern, "pattern"), 0, Objects.requireNonNull(factory, "factory")));
            return this;
        }

        /** Also serve {@code pattern}, elements encoded by {@code codec}; a null pattern, codec or factory is refused as by {@code route}. */
        public <T> Builder serve(String pattern, Codec<T> codec, Function<PublisherRequest, Flow.Publisher<T>> factory) {
            options.routes.add(Encoding.route(Objects.requireNonNull(pattern, "pattern"), codec, factory));
            return this;
        }

        /**
         * Handles one-way messages the servers send to {@code pattern} (extension messages, PROTOCOL.md
         * §20), named as routes are: an exact name, or segments like {@code events/{kind}}; exact
         * names win, then patterns in the order added, and {@link Message#params()} has the
         * query and the fields. The handler runs on the connection's I/O thread, in the order the
         * messages arrived, and must not block; each message holds one of the peer's credits until
         * it returns (§20.3). A handler that throws is logged (WARNING, {@code io.rstreams.net.messages});
         * a message no handler has is dropped and logged (§20.4); the connection goes on either way.
         */
        public Builder handler(String pattern, Consumer<Message> handler) {
            options.handler(pattern, handler);
            return this;
        }

        /**
         * {@link #handler(String, Consumer)} for work that ends later: the message holds its credit
         * until the returned stage completes (or right away if it returns null), so a slow handler
         * slows its sender instead of queueing (§20.3); a stage that fails is logged as a throw is.
         */
        public Builder asyncHandler(String pattern, Function<Message, ? extends CompletionStage<?>> handler) {
            options.asyncHandler(pattern, handler);
            return this;
        }

        /**
         * The message credit granted to each peer (§20.3), as rstreams' {@code max_messages_in_flight}:
         * at most this many of its messages are being handled at once, each at most
         * {@code max_string_length} bytes. Default 16.
         */
        public Builder maxMessagesInFlight(int messages) {
            options.maxMessagesInFlight(messages);
            return this;
        }

        public RsioClient build() {
            return new RsioClient(this);
        }
    }
}
