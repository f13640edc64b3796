package io.rstreams.net;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.GlobalEventExecutor;
import io.rstreams.wire.Connection;
import io.rstreams.wire.Limits;
import io.netty.handler.ssl.SslContext;
import io.rstreams.wire.Credentials;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.function.BiPredicate;
import java.util.function.Predicate;
import javax.net.ssl.SSLContext;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.concurrent.CompletionStage;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * Serves named publishers over RS.io (PROTOCOL.md). Each peer's subscribe is matched against
 * the routes (exact names, then patterns such as {@code sensors/{id}}), the factory makes a
 * {@link Flow.Publisher} for it, and the server pumps it to the peer within the peer's demand
 * and the socket's pace. A name that matches nothing is refused with onError.
 *
 * <pre>{@code
 * try (RsioServer server = RsioServer.builder()
 *         .route("counter", Codec.INT64, request -> new Counter(request.longParam("to", 10)))
 *         .bind("tcp://127.0.0.1:0")) {
 *     System.out.println("serving on " + server.url());
 *     server.awaitClose();
 * }
 * }</pre>
 */
public final class RsioServer implements AutoCloseable {
    /** {@link Builder#maxConnections}' default, as rstreams' max_connections. */
    public static final int DEFAULT_MAX_CONNECTIONS = 10_000;
    private final EventLoopGroup boss;
    private final EventLoopGroup workers;
    private final Channel listener;
    private final ChannelGroup channels = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);
    private final String url;
    private final java.util.Map<String, Endpoint> sessions = new java.util.concurrent.ConcurrentHashMap<>();
    /** Connections admitted (counted against maxConnections) and refused, until each is over: close() says goodbye to them. */
    private final java.util.Set<Endpoint> endpoints = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /** With resume: accepted transports whose first byte has not shown a new session or a resume yet (§16.3). */
    private final java.util.Set<Endpoint> undecided = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private final java.util.concurrent.atomic.AtomicInteger admitted = new java.util.concurrent.atomic.AtomicInteger();
    private final int maxConnections;
    private final java.util.concurrent.atomic.AtomicBoolean closing = new java.util.concurrent.atomic.AtomicBoolean();

    private RsioServer(Builder b, RsioUrl where) throws InterruptedException {
        if (!b.authRequired && b.authenticator == null) {
            throw new IllegalStateException("authRequired(false) needs authenticate(...) or token(...) too: it makes the credentials "
                    + "those check optional (PROTOCOL.md §15.2)");
        }
        boolean authOptional = !b.authRequired;
        Endpoint.Sessions table = new Endpoint.Sessions() {
            @Override
            public void register(byte[] token, Endpoint endpoint) {
                sessions.put(java.util.HexFormat.of().formatHex(token), endpoint);
            }

            @Override
            public void forget(byte[] token, Endpoint endpoint) {
                sessions.remove(java.util.HexFormat.of().formatHex(token), endpoint);
            }
        };
        Endpoint.Options options = b.options.endpoint(b.idleTimeout, null, b.authenticator, b.authorizer,
                b.options.resume() ? b.options.resumeOptions(b.sessionTimeout, table, null) : null);
        boss = new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory("rstreams-accept", true), Transport.ioHandler());
        workers = new MultiThreadIoEventLoopGroup(b.options.resume() ? 1 : b.options.threads(), new DefaultThreadFactory("rstreams-server", true),
                Transport.ioHandler());
        Consumer<RsioConnection> hook = b.onConnection;
        maxConnections = b.maxConnections;
        SSLContext tls = b.options.tls();
        if (where.secure() && tls == null) {
            throw new IllegalArgumentException(where.scheme() + ":// needs a certificate: call tls(SSLContext) on the builder");
        }
        if (!where.secure() && tls != null) {
            throw new IllegalArgumentException("tls(SSLContext) was given for " + where.scheme() + "://; use tls:// or wss://");
        }
        SslContext ssl = tls == null ? null : Pipelines.sslContext(tls, false);
        java.util.Set<String> origins = b.origins;
        ServerBootstrap bootstrap = new ServerBootstrap()
                .group(boss, workers)
                .channel(Transport.serverChannel(where.unix()))
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        channels.add(ch);
                        Endpoint endpoint = new Endpoint(Connection.Side.SERVER, options);
                        if (authOptional) {
                            endpoint.connection().authRequired(false); // before any byte is read (§15.2)
                        }
                        // over: a connection's transport closed; with resume, its session over (§16.6)
                        CompletableFuture<Void> over = options.resume() != null ? endpoint.closedFuture() : new CompletableFuture<>();
                        if (options.resume() == null) {
                            ch.closeFuture().addListener(f -> over.complete(null));
                        }
                        if (options.resume() != null) {
                            // announced once the first byte shows a new session, not a resume (§16.3):
                            // what the hook sends must not come between a resumed transport's hello and resumed
                            Runnable announce = () -> {
                                undecided.remove(endpoint);
                                admit(endpoint, hook, over);
                            };
                            Pipelines.server(ch.pipeline(), where, ssl, origins, new ResumeSniffer(endpoint,
                                    token -> sessions.get(java.util.HexFormat.of().formatHex(token)), announce), endpoint);
                            undecided.add(endpoint); // until its first byte: close() says goodbye to it too
                            ch.closeFuture().addListener(f -> undecided.remove(endpoint));
                        } else {
                            Runnable announce = () -> admit(endpoint, hook, over);
                            Pipelines.server(ch.pipeline(), where, ssl, origins, endpoint);
                            announce.run();
                        }
                    }
                });
        if (Transport.halfCloses(where.unix())) {
            bootstrap.childOption(ChannelOption.ALLOW_HALF_CLOSURE, true);
        }
        if (!where.unix()) {
            bootstrap.childOption(ChannelOption.TCP_NODELAY, true);
        }
        try {
            listener = (where.unix() ? bootstrap.bind(where.address()) : bootstrap.bind(where.host(), where.port())).sync().channel();
        } catch (RuntimeException | InterruptedException e) {
            shutdownGroups();
            throw e;
        }
        url = where.unix() ? where.toString() : where.withPort(((InetSocketAddress) listener.localAddress()).getPort()).toString();
    }

    /**
     * Counts a new connection (a new session, with resume) against maxConnections, on its I/O
     * thread before anything is read from it: one beyond the limit is refused at its clientHello
     * (goodbye with code 8, unavailable, PROTOCOL.md §10) and never announced; it stops counting
     * once it is over (a session: once it can no longer be resumed).
     */
    private void admit(Endpoint endpoint, Consumer<RsioConnection> hook, CompletableFuture<Void> over) {
        endpoints.add(endpoint);
        over.whenComplete((v, e) -> endpoints.remove(endpoint));
        if (closing.get()) {
            endpoint.closeOrderly("server closing");
            return;
        }
        if (admitted.incrementAndGet() > maxConnections) {
            admitted.decrementAndGet();
            endpoint.refuseAtHello("too many connections: this server accepts at most " + maxConnections + " (maxConnections)");
            return;
        }
        over.whenComplete((v, e) -> admitted.decrementAndGet());
        if (hook != null) {
            hook.accept(endpoint.facade());
        }
    }

    /** Connections counted against {@link Builder#maxConnections} now (read by tests). */
    int admitted() {
        return admitted.get();
    }

    /** A builder with no routes yet. */
    public static Builder builder() {
        return new Builder();
    }

    /** Where the server listens, with the real port: {@code tcp://127.0.0.1:40123}. */
    public String url() {
        return url;
    }

    /** The port the server listens on (0 for a Unix socket). */
    public int port() {
        return listener.localAddress() instanceof InetSocketAddress address ? address.getPort() : 0;
    }

    /** Blocks until {@link #close()} is called (from another thread). */
    public void awaitClose() throws InterruptedException {
        listener.closeFuture().sync();
    }

    /**
     * Stops listening and says goodbye {@code server closing} to every connection, with code 0
     * (normal) where error-codes is active, as rstreams' Server.aclose: the peers' answers are
     * awaited all at once, for five seconds at most in all (rstreams' CLOSE_TIMEOUT), each
     * transport closing as soon as its peer's answering goodbye arrives or its input ends; a connection whose
     * peer has not said hello gets its goodbye without a code and no wait for an answer (its
     * input discarded for the two-second linger at most; with resume, so does a transport whose
     * first byte has not come yet, §16.3). Local publishers are cancelled; every transport left
     * after the five seconds is closed. Idempotent: a second call only waits for the I/O
     * threads to stop. Called on one of the server's own I/O threads (from a publisher factory or
     * a stream's callback, say), it starts all that and returns at once: the thread cannot wait
     * for work that it has to do itself once the callback returns.
     */
    @Override
    public void close() {
        if (closing.compareAndSet(false, true)) {
            listener.close(); // a connection accepted meanwhile is said goodbye by admit()
            java.util.List<CompletableFuture<Void>> goodbyes = new java.util.ArrayList<>();
            java.util.Set<Endpoint> all = new java.util.HashSet<>(endpoints);
            all.addAll(sessions.values());
            all.addAll(undecided);
            for (Endpoint endpoint : all) {
                CompletableFuture<Void> done = new CompletableFuture<>();
                goodbyes.add(done);
                try {
                    endpoint.loop().execute(() -> endpoint.closeOrderly("server closing").whenComplete((v, e) -> done.complete(null)));
                } catch (java.util.concurrent.RejectedExecutionException e) {
                    done.complete(null);
                }
            }
            CompletableFuture.allOf(goodbyes.toArray(new CompletableFuture<?>[0]))
                    .completeOnTimeout(null, Endpoint.CLOSE_MILLIS, TimeUnit.MILLISECONDS) // bounded: what did not answer is closed
                    .whenComplete((v, e) -> stop());
        }
        if (onIoThread()) {
            return;
        }
        try {
            workers.terminationFuture().await();
            boss.terminationFuture().await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // the wait ends, and is kept: what is left is closed now
            stop();
            workers.terminationFuture().awaitUninterruptibly();
            boss.terminationFuture().awaitUninterruptibly();
        }
    }

    /** Closes every transport left and stops the I/O threads, without waiting (idempotent). */
    private void stop() {
        channels.close();
        boss.shutdownGracefully(0, 2, TimeUnit.SECONDS);
        workers.shutdownGracefully(0, 2, TimeUnit.SECONDS);
    }

    private boolean onIoThread() {
        for (EventLoopGroup group : java.util.List.of(boss, workers)) {
            for (io.netty.util.concurrent.EventExecutor loop : group) {
                if (loop.inEventLoop()) {
                    return true;
                }
            }
        }
        return false;
    }

    private void shutdownGroups() {
        boss.shutdownGracefully(0, 2, TimeUnit.SECONDS);
        workers.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
    }

    /**
     * The authorize hook that also sees the subscribe's metadata (PROTOCOL.md §15.4, §18.1):
     * {@link Builder#authorize(Authorize)}.
     */
    @FunctionalInterface
    public interface Authorize {
        /**
         * Whether the subscribe may go on: {@code true} lets it; {@code false} refuses it (code 4);
         * a {@link RemoteStreamException} with a code refuses it with its own text and code.
         *
         * @param credentials the principal: the subscribe's own credentials, else the connection's;
         *     null for a client served unauthenticated ({@link Builder#authRequired authRequired(false)})
         * @param name the publisher name as the client wrote it, query included
         * @param metadata the subscribe's entries ({@link io.rstreams.wire.SubscribeMetadata#EMPTY} without any)
         */
        boolean test(Credentials credentials, String name, io.rstreams.wire.SubscribeMetadata metadata);
    }

    /** Routes and options of a {@link RsioServer}. */
    public static final class Builder {
        private final BuilderOptions options = new BuilderOptions();
        private Duration idleTimeout = Duration.ofSeconds(60);
        private Consumer<RsioConnection> onConnection;
        private int maxConnections = DEFAULT_MAX_CONNECTIONS;
        private Predicate<Credentials> authenticator;
        private io.rstreams.wire.Authorizer authorizer;
        private boolean authRequired = true;
        private Duration sessionTimeout = Duration.ofSeconds(30);
        private java.util.Set<String> origins = java.util.Set.of();

        private Builder() {}

        /**
         * The browser pages, besides the server's own, that may open a {@code ws://} or
         * {@code wss://} connection (docs/security.md): each an origin as a page's address begins,
         * {@code "https://app.example:8443"}, or {@code "*"} for every page. A handshake without
         * an Origin header (Java, Python and Node clients) is always accepted, and so is the
         * server's own origin ({@code http(s)://host:port} of its URL; for a loopback or wildcard
         * host also {@code localhost}, {@code 127.0.0.1} and {@code [::1]}); any other gets HTTP
         * 403. Default: none besides the server's own. Each call replaces the previous list.
         *
         * @throws IllegalArgumentException naming {@code origins} if one is not
         *     {@code http(s)://host[:port]} or {@code "*"}
         */
        public Builder origins(String... origins) {
            this.origins = OriginCheck.check(java.util.Arrays.asList(Objects.requireNonNull(origins, "origins")));
            return this;
        }

        /**
         * Offers extension resume (PROTOCOL.md §16): a client whose transport breaks can continue
         * its session on a new one within the session timeout. With resume on, the server uses
         * one I/O thread for its connections (a resumed transport must reach its session's thread).
         */
        public Builder resume(boolean on) {
            options.resume(on);
            return this;
        }

        /**
         * With {@link #resume resume(true)}: a transport on which nothing was read for this long
         * is taken for dead, a link that vanished without a reset (PROTOCOL.md §16.7's
         * stall_timeout), and the server closes it and waits for the resume. Keepalive's pings (15 s) keep a live link heard. Default 45 s,
         * as rstreams'; null: off, a silent transport is kept until it ends.
         *
         * @throws IllegalArgumentException naming {@code stallTimeout} if it is zero or negative
         */
        public Builder stallTimeout(Duration timeout) {
            options.stallTimeout(timeout);
            return this;
        }

        /**
         * With {@link #resume resume(true)}: the most bytes of each session's stream kept for a
         * replay, sent and not yet acknowledged by its client (PROTOCOL.md §16.4, §16.7's
         * buffer_bytes): the session's publishers pause there until acknowledgements bring it under
         * half, and the server acknowledges what it receives once a quarter of this much has
         * arrived. Default 4 MiB per session, as rstreams'.
         *
         * @throws IllegalArgumentException naming {@code bufferBytes} if it is below 4096 (as rstreams' minimum)
         */
        public Builder bufferBytes(long bytes) {
            options.bufferBytes(bytes);
            return this;
        }

        /**
         * With {@link #resume resume(true)}: how long after something arrived from a client it is
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
         * Offers extension error-codes (PROTOCOL.md §19), as every connection does by default: to a
         * client that offers it too, a code of §19.2 travels beside the text of each onError and
         * goodbye. {@code false} withholds it (as rstreams'
         * {@code ConnectionConfig(disabled_extensions=frozenset({6}))}), to behave like a server
         * that predates it: no errorCode or goodbyeCode goes out, and one received is a protocol
         * violation (§4.4).
         */
        public Builder errorCodes(boolean on) {
            options.errorCodes(on);
            return this;
        }

        /** How long a broken session waits for its client's resume (default 30 s, §16.7). */
        public Builder sessionTimeout(Duration timeout) {
            this.sessionTimeout = Objects.requireNonNull(timeout, "timeout");
            return this;
        }

        /**
         * Requires every client to authenticate (extension auth, PROTOCOL.md §15) with credentials
         * {@code check} accepts; a client without auth (unless {@link #authRequired authRequired(false)}), or refused, is closed with a goodbye
         * saying so, and subscribes wait until the client's authenticate is settled. {@code check}
         * is called on the I/O thread, for the connection's authenticate and for every
         * subscribeCredentials; an exception from it (logged by its class only: its text could
         * quote the credentials, and the peer never sees it) refuses those credentials as
         * {@code false} does, as rstreams' {@code serve(authenticate=...)} does: the connection's
         * with goodbye {@code authentication failed (PROTOCOL.md §15.3)}, a subscribe's own with
         * onError {@code unauthenticated: subscribe to 'PATH' needs valid credentials (PROTOCOL.md
         * §15.4)}, the connection going on, both with code 3 (unauthenticated).
         */
        public Builder authenticate(Predicate<Credentials> check) {
            Objects.requireNonNull(check, "check");
            this.authenticator = credentials -> {
                try {
                    return check.test(credentials);
                } catch (RuntimeException e) {
                    System.getLogger("io.rstreams.net").log(System.Logger.Level.ERROR,
                            "the authenticate hook threw " + e.getClass().getName() + "; credentials refused");
                    return false;
                }
            };
            return this;
        }

        /**
         * Authorizes every subscribe (PROTOCOL.md §15.4), as rstreams' {@code serve(...,
         * authorize=...)}: {@code check} is called on the I/O thread with the credentials the
         * subscribe goes with (its own subscribeCredentials, else the connection's: the principal,
         * which {@link #authenticate} or {@link #token} accepted) and the publisher's name as the
         * client wrote it, query included. {@code true} lets the subscribe go on to its route;
         * {@code false}, or an exception (logged by its class only: its text could quote the
         * credentials), refuses it with onError {@code unauthorized: subscribe to 'PATH' is not
         * allowed for this principal (PROTOCOL.md §15.4)} and code 4 (unauthorized), {@code PATH}
         * the name up to its first {@code ?}, and the connection goes on. Alone, without
         * {@link #authenticate} or {@link #token}, as rstreams' {@code serve(authorize=...)}: the
         * server does not offer extension auth (§15.2), every client is served unauthenticated and
         * {@code check} is asked with null credentials (a client that insists on authenticating
         * finds no auth in the server's hello and gives up, as it would with no hook at all).
         */
        public Builder authorize(BiPredicate<Credentials, String> check) {
            Objects.requireNonNull(check, "check");
            return authorize((credentials, name, metadata) -> check.test(credentials, name));
        }

        /**
         * {@link #authorize(BiPredicate)} with a hook that also sees the subscribe's metadata
         * (extension metadata, PROTOCOL.md §18.1; {@link io.rstreams.wire.SubscribeMetadata#EMPTY}
         * without any), as rstreams' {@code subscribe_metadata()} inside its authorize hook and
         * JavaScript's {@code authorize(principal, name, metadata)}. As there, {@code false} or an
         * exception refuses the subscribe with code 4, except that a {@link RemoteStreamException}
         * with a code refuses it with its own text and code (as JavaScript's hook refuses with an
         * error that has a {@code code}): {@code throw new RemoteStreamException("quota exceeded",
         * ErrorCode.UNAVAILABLE)} sends onError {@code quota exceeded} with code 8.
         */
        public Builder authorize(Authorize check) {
            Objects.requireNonNull(check, "check");
            this.authorizer = (credentials, name, metadata) -> {
                try {
                    return check.test(credentials, name, metadata) ? null : io.rstreams.wire.Authorizer.unauthorized(name);
                } catch (RemoteStreamException e) {
                    if (e.code().isPresent()) { // refused on purpose: its text and code
                        return new io.rstreams.wire.Authorizer.Refusal(ServingStream.text(e), e.code().getAsLong());
                    }
                    System.getLogger("io.rstreams.net").log(System.Logger.Level.ERROR,
                            "the authorize hook threw " + e.getClass().getName() + "; subscribe to '" + name + "' refused");
                    return io.rstreams.wire.Authorizer.unauthorized(name);
                } catch (RuntimeException e) {
                    System.getLogger("io.rstreams.net").log(System.Logger.Level.ERROR,
                            "the authorize hook threw " + e.getClass().getName() + "; subscribe to '" + name + "' refused");
                    return io.rstreams.wire.Authorizer.unauthorized(name);
                }
            };
            return this;
        }

        /**
         * Whether every client must authenticate (PROTOCOL.md §15.2), with {@link #authenticate} or
         * {@link #token}: {@code true} by default. {@code false} (rstreams' {@code serve(...,
         * auth_required=False)}, JavaScript's {@code authRequired: false}) serves a client whose
         * hello does not list extension auth unauthenticated: its subscribes (and messages, §20.4)
         * go on unless {@link #authorize} refuses them, asked with null credentials, and without an
         * authorize hook every one goes on. A client that presents credentials must still have
         * them accepted (goodbye {@code authentication failed (PROTOCOL.md §15.3)} otherwise),
         * and its own per-subscribe credentials are checked as before. Needs
         * {@link #authenticate} or {@link #token} ({@link #bind} throws IllegalStateException
         * otherwise).
         */
        public Builder authRequired(boolean required) {
            this.authRequired = required;
            return this;
        }

        /** Requires every client to present this token (compared in constant time). */
        public Builder token(String token) {
            byte[] expected = Objects.requireNonNull(token, "token").getBytes(StandardCharsets.UTF_8);
            return authenticate(c -> c.token() != null
                    && MessageDigest.isEqual(expected, c.token().getBytes(StandardCharsets.UTF_8)));
        }

        /** The server's certificate and key for {@code tls://} and {@code wss://} (required there, refused elsewhere). */
        public Builder tls(SSLContext context) {
            options.tls(context);
            return this;
        }

        /**
         * Serves {@code pattern} (an exact name, or segments like {@code sensors/{id}}): the
         * factory makes a publisher of raw byte elements for each subscribe, or returns null to
         * refuse it as unknown.
         */
        public Builder route(String pattern, Function<PublisherRequest, Flow.Publisher<byte[]>> factory) {
            options.routes.add(new Routes.Route(Objects.requireNonNull(pattern, "pattern"), 0, Objects.requireNonNull(factory, "factory")));
            return this;
        }

        /** Serves {@code pattern} with elements encoded by {@code codec} (fixed-size codecs travel packed, §7). */
        public <T> Builder route(String pattern, Codec<T> codec, Function<PublisherRequest, Flow.Publisher<T>> factory) {
            options.routes.add(Encoding.route(Objects.requireNonNull(pattern, "pattern"), codec, factory));
            return this;
        }

        /**
         * Serves channel {@code pattern} (extension channels, PROTOCOL.md §21), named as routes are
         * (an exact name, or segments like {@code upper/{lang}}; exact names win, then patterns in
         * the order added): for each channel a client opens, the factory gets the channel's input and
         * the request, and returns the output, served as a route's publisher is, or null to refuse it
         * as unknown ({@code no channel named 'PATH' (PROTOCOL.md §21.3)}, code 2; a factory that
         * throws: code 9, §19.2). The input is a publisher of raw elements that may be subscribed to
         * once; its subscriber's requests are the input demand granted to the client (§21.4), its
         * cancel the input's (§21.5); elements and its end arrive on the connection's I/O thread; an
         * inputError fails it with a {@link ChannelInputException}, and when the output ends first
         * (completes, fails, is cancelled, or the connection ends) a running input fails with an
         * {@link IllegalStateException} (§21.5). A plain subscribe never reaches a channel (§21.3).
         */
        public Builder channel(String pattern, BiFunction<Flow.Publisher<byte[]>, PublisherRequest, Flow.Publisher<byte[]>> factory) {
            Objects.requireNonNull(factory, "factory");
            options.routes.addChannel(Objects.requireNonNull(pattern, "pattern"), 0, null, factory::apply);
            return this;
        }

        /** {@link #channel(String, BiFunction)} with input and output elements encoded by {@code codec}. */
        public <T> Builder channel(String pattern, Codec<T> codec, BiFunction<Flow.Publisher<T>, PublisherRequest, Flow.Publisher<T>> factory) {
            return channel(pattern, codec, codec, factory);
        }

        /**
         * {@link #channel(String, BiFunction)} with the input's elements decoded by {@code input} (an
         * element it cannot decode cancels the input and fails its subscriber) and the output's
         * encoded by {@code output} (fixed-size codecs travel packed, §7; its media type is stated, §17).
         */
        public <I, O> Builder channel(String pattern, Codec<I> input, Codec<O> output,
                BiFunction<Flow.Publisher<I>, PublisherRequest, Flow.Publisher<O>> factory) {
            Objects.requireNonNull(input, "input");
            Objects.requireNonNull(output, "output");
            Objects.requireNonNull(factory, "factory");
            String type = output.mediaType();
            if (type != null) {
                io.rstreams.wire.ContentTypes.check(type);
            }
            options.routes.addChannel(Objects.requireNonNull(pattern, "pattern"), output == Codec.BYTES ? 0 : output.elementSize(), type,
                    (in, request) -> {
                        Flow.Publisher<O> p = factory.apply(in.decoded(input), request);
                        return p == null ? null : Encoding.encoded(p, output);
                    });
            return this;
        }

        /**
         * Handles one-way messages the peer sends to {@code pattern} (extension messages, PROTOCOL.md
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

        /** What the server accepts from each peer (PROTOCOL.md §11). */
        public Builder limits(Limits limits) {
            options.limits(limits);
            return this;
        }

        /** Ping a silent peer after this long (§14); null: never. Default 15 s. */
        public Builder keepalive(Duration interval) {
            options.keepalive(interval);
            return this;
        }

        /** Close a peer from which nothing arrived for this long (§14.2); null: never. Default 60 s. */
        public Builder idleTimeout(Duration timeout) {
            this.idleTimeout = timeout;
            return this;
        }

        /**
         * Say goodbye to a peer whose clientHello has not come this long after its connection was
         * accepted (its TLS or WebSocket handshake included: one still in it is closed), goodbye
         * {@code handshake timeout (no clientHello within N s)}; with {@link #authenticate}, also to
         * one whose credentials are not settled this long after its hello, goodbye
         * {@code authentication timeout (...) (PROTOCOL.md §15.3)}. Bytes trickled in keep the
         * idle timeout from firing, never this one. null: no limit. Default 10 s, as rstreams'
         * handshake_timeout.
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

        /**
         * Called (on the connection's I/O thread) for every accepted connection; with resume on,
         * once the connection's first byte shows a new session (a transport that resumes one is
         * not a new connection, §16.3).
         */
        public Builder onConnection(Consumer<RsioConnection> hook) {
            this.onConnection = hook;
            return this;
        }

        /**
         * Most connections open at once (default 10 000, as rstreams' max_connections), counted
         * from the accept (with resume: from the first byte showing a new session) until the
         * connection is over (a session: until it can no longer be resumed). One beyond it is sent
         * a goodbye {@code too many connections: this server accepts at most N (maxConnections)} at
         * its clientHello, with code 8 (unavailable) when its hello offers error-codes (PROTOCOL.md
         * §10, §19); nothing it sent after the hello is served, and it is not passed to
         * {@link #onConnection}. The handshake timeout bounds how long one waits for its hello.
         *
         * @throws IllegalArgumentException naming {@code maxConnections} if {@code max < 1}
         */
        public Builder maxConnections(int max) {
            if (max < 1) {
                throw new IllegalArgumentException("maxConnections must be >= 1, got " + max);
            }
            this.maxConnections = max;
            return this;
        }

        /** I/O threads for connections (default 1). */
        public Builder threads(int threads) {
            options.threads(threads);
            return this;
        }

        /**
         * Starts listening on {@code url}: {@code tcp://host:port}, {@code tls://host:port},
         * {@code ws://host:port/path} or {@code wss://host:port/path} (port 0: any free port), or
         * {@code unix:///path/to/socket} (the socket file must not exist yet; it is removed on close).
         *
         * @throws IllegalArgumentException if the URL is malformed or its scheme is not supported
         * @throws IllegalStateException if {@link #authorize} was given without {@link #authenticate} or {@link #token}
         * @throws InterruptedException if interrupted while binding
         */
        public RsioServer bind(String url) throws InterruptedException {
            return new RsioServer(this, RsioUrl.parse(url));
        }
    }
}
