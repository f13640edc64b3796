package io.rstreams.net;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.DuplexChannel;
import io.netty.handler.ssl.SslHandler;
import io.rstreams.wire.Connection;
import io.rstreams.wire.ErrorCode;
import io.rstreams.wire.Event;
import io.rstreams.wire.FrameType;
import io.rstreams.wire.Limits;
import io.rstreams.wire.ProtocolException;
import io.rstreams.wire.Credentials;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.ScheduledFuture;
import java.util.function.Predicate;

/**
 * The I/O loop around one {@link Connection}: Netty reads feed it, its output is written once
 * per event-loop turn, its events reach the streams. Everything here runs on the channel's
 * event loop; other threads hand work over with {@link #execute}.
 */
@io.netty.channel.ChannelHandler.Sharable // one session may outlive several channels (extension resume)
final class Endpoint extends ChannelInboundHandlerAdapter {
    private static final System.Logger LOG = System.getLogger("io.rstreams.net");
    /** How long an endpoint that sent an error goodbye keeps reading before it closes (PROTOCOL.md §10), as rstreams' LINGER_SECONDS. */
    static final long LINGER_MILLIS = 2000;
    /**
     * How long an orderly close (ours, §9.1) waits for the peer's answering goodbye (or its end
     * of input) before the transport is closed anyway, as rstreams' CLOSE_TIMEOUT; a server's close()
     * waits this long in all, its connections at the same time.
     */
    static final long CLOSE_MILLIS = 5000;
    /**
     * Bytes discarded while lingering past which the transport is closed at once (a peer still
     * writing is reset), as rstreams' LINGER_BYTES: a peer flooding after our goodbye would
     * otherwise have the I/O thread read and drop all it can send for the whole linger time.
     */
    static final long LINGER_BYTES = 4L << 20;
    /**
     * Unsent bytes past which the peer is said goodbye and the transport closed: production
     * stops at the channel's high-water mark, but replies (pongs, refusals, acknowledgements) to
     * a peer that writes and never reads would otherwise pile up without bound (§6.3), as
     * rstreams' MAX_UNSENT.
     */
    static final long MAX_UNSENT = 16L << 20;
    /**
     * Unsent reply bytes past which the peer is no longer read, until it has read them (input
     * backpressure, §6.3), as rstreams' low_water (DEFAULT_LOW_WATER): a peer that makes us answer
     * and reads nothing pins about this much, and MAX_UNSENT stays the last resort. Reading
     * resumes when the channel is writable again, below Netty's low-water mark (32 KiB), which
     * is under a quarter of this one.
     */
    static final long LOW_WATER = 256 * 1024;
    /**
     * How long a peer may leave our replies unread, while we do not read it, before it is said
     * goodbye (as rstreams' unread_timeout: two keepalive intervals of its default, 30 s).
     */
    static final Duration DEFAULT_UNREAD_TIMEOUT = Duration.ofSeconds(30);

    /**
     * Options shared by client and server ends; {@code authorizer} (a server's, with its
     * {@code authenticator}) null: every name; {@code resume} null: no session resumption;
     * {@code handshakeTimeout} (for the peer's hello; an accepting end's also for its credentials) null: none;
     * {@code errorCodes} false: extension error-codes (§19) is not offered, so never active;
     * {@code messages}: the message handlers and credit of extension messages (§20), always offered.
     * Extensions content-types (§17) and metadata (§18) are offered by every connection.
     */
    record Options(Limits limits, Routes routes, Duration keepalive, Duration idleTimeout, Duration unreadTimeout,
            Credentials credentials, Predicate<Credentials> authenticator, io.rstreams.wire.Authorizer authorizer,
            ResumeOptions resume, Duration handshakeTimeout,
            boolean errorCodes, MessageHandlers messages) {
        /** Options without message handlers (messages are still offered, and dropped on arrival, §20.4). */
        Options(Limits limits, Routes routes, Duration keepalive, Duration idleTimeout, Duration unreadTimeout,
                Credentials credentials, Predicate<Credentials> authenticator, io.rstreams.wire.Authorizer authorizer,
                ResumeOptions resume, Duration handshakeTimeout, boolean errorCodes) {
            this(limits, routes, keepalive, idleTimeout, unreadTimeout, credentials, authenticator, authorizer, resume,
                    handshakeTimeout, errorCodes, new MessageHandlers());
        }
    }

    /**
     * Extension resume (PROTOCOL.md §16): limits, and how this end finds sessions or new transports;
     * {@code stallTimeout} null: a silent transport is never taken for dead (§16.7); {@code ackDelay}:
     * how long after something arrived it is acknowledged, unless a quarter of {@code bufferBytes}
     * arrived first (§16.4). {@link BuilderOptions#resumeOptions} has the defaults.
     */
    record ResumeOptions(long bufferBytes, Duration sessionTimeout, Sessions sessions, Reconnector reconnector, Duration stallTimeout,
            Duration ackDelay) {}

    /** The server's table of resumable sessions, by token. */
    interface Sessions {
        void register(byte[] token, Endpoint endpoint);

        void forget(byte[] token, Endpoint endpoint);
    }

    /** How a client opens a new transport for its session (attempt 1, 2, ...). */
    interface Reconnector {
        void reconnect(Endpoint endpoint, int attempt);
    }

    private final Options options;
    private final Connection conn;
    private final Map<Long, RemoteSubscription<?>> consuming = new HashMap<>();
    private final List<Runnable> afterHello = new ArrayList<>(); // subscribes waiting for the peer's hello
    private final Map<Long, ServingStream> serving = new HashMap<>();
    /** The inputs of the channels this end serves (§21.3), by subscriber id, while their output runs. */
    private final Map<Long, ChannelInput<byte[]>> inputs = new HashMap<>();
    /** The inputs of the channels this end opened (§21.4), by subscriber id, while their output runs. */
    private final Map<Long, ChannelSender<?>> senders = new HashMap<>();
    private final CompletableFuture<Void> closed = new CompletableFuture<>();
    private final CompletableFuture<RsioConnection> active = new CompletableFuture<>();
    private final RsioConnection facade = new RsioConnection(this);
    private final MessagePump messages;
    /** The peer's subscribe that opens a channel (§21.3): its Subscribed comes right after its ChannelOpened (any id, 2**64 - 1 too). */
    private Long channelNext;
    private ChannelHandlerContext ctx;
    private Channel channel;
    private boolean flushQueued;
    private boolean ended;
    /** This fresh endpoint's transport went on under another session (a resume, §16.3): it has nothing to close. */
    private boolean retired;
    private boolean discarding;
    private long discarded;
    /**
     * Our goodbye is out and the peer's is awaited (§9.1): its input is still read, so that its
     * answer ends the wait; the connection discards anything else (elements in flight included).
     */
    private boolean awaitingAnswer;
    /** Closes the transport at the end of that wait ({@link #CLOSE_MILLIS} for an orderly close). */
    private ScheduledFuture<?> closeTimer;
    private boolean inputEnded;
    private long refillRound;
    private RuntimeException closedError;
    /** When the peer last showed it is alive: something read, or output it took (§14.2); our pings do not count. */
    private long lastActivity = System.nanoTime();
    private long pingCounter;
    private long lastPing = System.nanoTime();
    private ScheduledFuture<?> timer;
    /** The accepting end's handshake deadline: the clientHello, then (auth) the authenticate settled. */
    private ScheduledFuture<?> handshakeTimer;
    private long helloAt;
    /** A client's handshake timeout: the goodbye's reason, and what its streams fail with (naming the option). */
    private String abortReason;
    private String abortText;
    // extension resume (§16): null when not offered, or not active once the peer's hello came
    private Replay replay;
    private boolean resumeActive;
    private boolean linkUp;
    /** A client's attempts to resume since the transport broke, the one under way included (read by tests). */
    private volatile int attempts;
    private boolean ackQueued;
    private ScheduledFuture<?> expiry;
    /** The loop's clock when the current transport was last read from, and the stall timer it arms (§16.7). */
    private long heardAt;
    private ScheduledFuture<?> stallTimer;
    // input backpressure (§6.3): replies among the unsent bytes; reading paused while they back up
    private final ReplyLedger ledger = new ReplyLedger();
    private boolean backedUp;
    private ScheduledFuture<?> unreadTimer;
    /** Bytes read from the peer, and how many times reading was paused (read by tests from other threads). */
    private volatile long bytesRead;
    private volatile int readPauses;
    private volatile long peakUnsent;

    Endpoint(Connection.Side side, Options options) {
        this.options = options;
        Set<Long> extensions = new HashSet<>();
        extensions.add(FrameType.KEEPALIVE);
        extensions.add(FrameType.MESSAGES); // symmetric: handlers or none, every connection receives and may send (§20.1)
        extensions.add(FrameType.CONTENT_TYPES); // routes state their codec's media type (§17)
        extensions.add(FrameType.METADATA); // subscribes may carry entries, which factories and authorize see (§18)
        extensions.add(FrameType.CHANNELS); // a server serves the channels its builder offers, refuses the rest (§21.3); either end opens channels
        extensions.add(FrameType.INPUT_PARTS); // split input (§21.6): joined for a served channel, dropped with a refused one
        if (options.errorCodes()) {
            extensions.add(FrameType.ERROR_CODES); // codes beside onError and goodbye texts when the peer offers it too (§19)
        }
        if (options.credentials() != null || options.authenticator() != null) {
            extensions.add(FrameType.AUTH);
        }
        if (options.resume() != null) {
            extensions.add(FrameType.RESUME_EXTENSION);
            replay = new Replay(options.resume().bufferBytes());
        }
        this.conn = new Connection(side, options.limits(), extensions, options.authenticator(), options.authorizer());
        conn.messages().window(options.messages().window());
        this.messages = new MessagePump(this, options.messages());
    }

    io.netty.channel.EventLoop loop() {
        return channel.eventLoop();
    }

    /** Whether the caller runs on this connection's I/O thread. */
    boolean onLoop() {
        return channel != null && channel.eventLoop().inEventLoop();
    }

    Replay replay() {
        return replay;
    }

    RsioConnection facade() {
        return facade;
    }

    Connection connection() {
        return conn;
    }

    MessagePump messages() {
        return messages;
    }

    ReplyLedger ledger() {
        return ledger;
    }

    long bytesRead() {
        return bytesRead;
    }

    /** A client's attempts to resume since its transport last broke (§16.3), the one scheduled next included; 0 once one is attached. */
    int attempts() {
        return attempts;
    }

    int readPauses() {
        return readPauses;
    }

    /** Whether reading from the peer is paused because our replies to it back up (§6.3). */
    boolean readingPaused() {
        return backedUp;
    }

    Map<Long, ChannelSender<?>> senders() {
        return senders;
    }

    Map<Long, RemoteSubscription<?>> consuming() {
        return consuming;
    }

    /** Whether this end authenticates itself: a client given credentials (§15.2). */
    boolean authenticates() {
        return options.credentials() != null;
    }

    /**
     * Runs {@code task} on the I/O thread once the peer's hello was handled (after this end's
     * authenticate, §15.2), or once the connection ended, whichever comes first. I/O thread only.
     */
    void afterHello(Runnable task) {
        afterHello.add(task);
    }

    private void runAfterHello() {
        List<Runnable> tasks = new ArrayList<>(afterHello);
        afterHello.clear();
        for (Runnable task : tasks) {
            task.run();
        }
    }

    Map<Long, ServingStream> serving() {
        return serving;
    }

    /** Completes when the transport is up (for WebSocket: after the opening handshake). */
    CompletableFuture<RsioConnection> activeFuture() {
        return active;
    }

    CompletableFuture<Void> closedFuture() {
        return closed;
    }

    /** Non-null once the connection is over: the error new streams fail with. */
    RuntimeException closedError() {
        return closedError;
    }

    boolean writable() {
        return channel != null && linkUp && channel.isWritable() && (replay == null || replay.unacked() < replay.bound);
    }

    /** Whether the channel takes more now (below Netty's high-water mark): elements wait while it does not. */
    boolean channelWritable() {
        return channel != null && linkUp && channel.isWritable();
    }

    /** The most bytes ever unsent to the peer at once, as checkBacklog saw them (read by tests). */
    long peakUnsent() {
        return peakUnsent;
    }

    String describe() {
        return channel == null ? "(unconnected)" : String.valueOf(channel.remoteAddress());
    }

    /** Runs {@code task} on the I/O thread, after what is already queued there. */
    void execute(Runnable task) {
        try {
            channel.eventLoop().execute(task);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // the client was closed and its I/O threads stopped: every stream has ended already (rule 3.16: no throw)
        }
    }

    /** Runs {@code task} now when on the I/O thread, else {@link #execute}s it. */
    void runOnLoop(Runnable task) {
        if (channel.eventLoop().inEventLoop()) {
            task.run();
        } else {
            execute(task);
        }
    }

    /** Grants {@code n} more elements of the input of the channel {@code id} this end serves (inputRequest, §21.4; I/O thread). */
    void requestInput(long id, long n) {
        if (!ended) {
            conn.requestInput(id, n);
            scheduleFlush();
        }
    }

    /** Cancels the input of the channel {@code id} this end serves (inputCancel, §21.5; I/O thread). */
    void cancelInput(long id) {
        if (!ended) {
            conn.cancelInput(id);
            scheduleFlush();
        }
    }

    /** Writes the connection's output at the end of this event-loop turn. */
    void scheduleFlush() {
        if (!flushQueued) {
            flushQueued = true;
            channel.eventLoop().execute(this::flushNow);
        }
    }

    private void flushNow() {
        flushQueued = false;
        if (!linkUp) {
            return; // nothing goes out before the transport is up (TLS, WebSocket handshakes; a resume)
        }
        pumpParts();
        writePending();
        if (channel.isActive()) {
            ctx.flush();
        }
    }

    /** The connection's output as one buffer over its pieces (large payloads are not copied). */
    /**
     * What the connection has to send, copied once into one direct buffer. (Handing Netty the heap
     * buffers as one composite costs two copies: the NIO transport makes a direct copy of a heap
     * buffer, and reads a composite of several parts through a merged heap copy first.)
     */
    private ByteBuf output() {
        List<java.nio.ByteBuffer> buffers = conn.buffersToSend();
        if (replay != null) {
            replay.sent(buffers); // our stream, kept until the peer acknowledges it (§16.4)
        }
        int total = 0;
        for (java.nio.ByteBuffer b : buffers) {
            total += b.remaining();
        }
        ByteBuf out = ctx.alloc().directBuffer(total);
        for (java.nio.ByteBuffer b : buffers) {
            out.writeBytes(b.duplicate()); // the replay keeps b as it is
        }
        ledger.wrote(total, conn.hasQueuedParts());
        return out;
    }

    /** Writes queued parts of split elements, round robin over streams, while the channel takes them (§8). */
    private void pumpParts() {
        boolean emptied = false;
        while (conn.hasQueuedParts() && linkUp && channel.isActive() && channel.isWritable()) {
            emptied |= !conn.sendParts(conn.limits().splitThreshold()).isEmpty();
            if (conn.pendingOutput() > 0) {
                ctx.write(output());
            }
        }
        if (emptied) {
            refillAll();
        }
    }

    /** Lets every serving stream produce again, starting one further each time, so none starves; and every channel's input (§21.4). */
    private void refillAll() {
        if (!senders.isEmpty()) {
            for (ChannelSender<?> sender : new ArrayList<>(senders.values())) {
                sender.writable();
            }
        }
        List<ServingStream> streams = new ArrayList<>(serving.values());
        int n = streams.size();
        if (n == 0) {
            return;
        }
        int first = (int) (refillRound++ % n);
        for (int k = 0; k < n; k++) {
            streams.get((first + k) % n).refill();
        }
    }

    /**
     * Hands the connection's output to the channel without flushing it yet, so that the
     * channel's writability counts it (production stops at the high-water mark) and the flush
     * at the end of the turn writes it in one go.
     */
    void writePending() {
        if (conn.pendingOutput() > 0 && linkUp && channel.isActive()) {
            if (channel.isWritable()) {
                lastActivity = System.nanoTime(); // a peer that takes what we write is not idle (§14.2)
            }
            ctx.write(output());
            scheduleFlush();
            checkBacklog();
        }
    }

    /**
     * Bytes handed to the channel and not yet taken by the socket, as Netty counts them: after
     * the pipeline's encoders, plus its overhead per queued write (ReplyLedger says what that
     * does to the count of unsent replies). Output a TLS layer still holds (before its handshake
     * is done, or not yet wrapped) counts too: Netty's SslHandler adds its queue to the channel's
     * pending bytes (read by tests).
     */
    long unsent() {
        io.netty.channel.ChannelOutboundBuffer buffer = channel.unsafe().outboundBuffer();
        return buffer == null ? 0 : buffer.totalPendingWriteBytes();
    }

    /**
     * Input backpressure (§6.3): stops reading the peer once the replies among the unsent bytes
     * pass LOW_WATER (the channel is then not writable: its writability coming back resumes
     * reading); past MAX_UNSENT, whatever they are, the peer is said goodbye.
     */
    private void checkBacklog() {
        if (!conversing()) {
            return;
        }
        long unsent = unsent();
        if (unsent > peakUnsent) {
            peakUnsent = unsent;
        }
        if (unsent > MAX_UNSENT) {
            notReading("more than " + MAX_UNSENT + " bytes unsent to it (PROTOCOL.md §6.3)");
            return;
        }
        if (!backedUp && !ended && ledger.unsentReplies(unsent) > LOW_WATER) {
            backedUp = true;
            readPauses++;
            channel.config().setAutoRead(false);
            if (options.unreadTimeout() != null) {
                unreadTimer = channel.eventLoop().schedule(this::unreadExpired,
                        options.unreadTimeout().toMillis(), TimeUnit.MILLISECONDS);
            }
        }
    }

    private void unreadExpired() {
        unreadTimer = null;
        if (backedUp && !ended && conversing()) {
            String seconds = PythonG.seconds(options.unreadTimeout());
            notReading("replies left unread for " + seconds + " s (unreadTimeout, PROTOCOL.md §6.3)");
        }
    }

    /** Whether the conversation is on (or about to be): a peer not reading is then said goodbye. */
    private boolean conversing() {
        Connection.State state = conn.state();
        return state == Connection.State.OPEN || state == Connection.State.AWAITING_HELLO;
    }

    /** Says goodbye to a peer that does not read what we send it, saying {@code why}. */
    private void notReading(String why) {
        conn.abort("peer not reading: " + why, ErrorCode.LIMIT_EXCEEDED);
        process(); // the goodbye queues behind what the peer does not read: the linger time closes
    }

    /** Reads from the peer again: it took our replies, or the conversation is over (a linger discards). */
    private void resumeReading() {
        if (backedUp) {
            backedUp = false;
            if (unreadTimer != null) {
                unreadTimer.cancel(false);
                unreadTimer = null;
            }
            channel.config().setAutoRead(true);
        }
    }

    // ---- Netty callbacks ------------------------------------------------------------------

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        if (this.ctx == null) {
            this.ctx = ctx;
            this.channel = ctx.channel();
            Duration limit = options.handshakeTimeout();
            if (limit != null && conn.side() == Connection.Side.SERVER) { // from the accept: a TLS or WebSocket handshake counts too
                handshakeTimer = channel.eventLoop().schedule(this::handshakeExpired, limit.toNanos(), TimeUnit.NANOSECONDS);
            }
        } // else: a new transport for this session, attached by attach() once resumed (§16.3)
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        if (ctx != this.ctx) {
            return; // a resumed transport is attached by attach()
        }
        linkUp = true;
        Duration limit = options.handshakeTimeout();
        if (limit != null && conn.side() == Connection.Side.CLIENT) { // from the transport up, for the serverHello
            handshakeTimer = channel.eventLoop().schedule(this::handshakeExpired, limit.toNanos(), TimeUnit.NANOSECONDS);
        }
        active.complete(facade);
        flushNow(); // our hello (§4.1)
        long period = timerPeriodMillis();
        if (period > 0) {
            timer = ctx.executor().scheduleAtFixedRate(this::tick, period, period, TimeUnit.MILLISECONDS);
        }
        ctx.fireChannelActive();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        ByteBuf buf = (ByteBuf) msg;
        try {
            if (ctx == this.ctx && discarding) {
                discarded += buf.readableBytes();
                if (discarded > LINGER_BYTES) {
                    closeAfterWait(); // §10's linger ends: the peer had enough time to read the goodbye
                }
                return;
            }
            if (ctx != this.ctx || (ended && !awaitingAnswer)) {
                return; // a replaced transport, or a connection that is over (and not awaiting the answer to our goodbye)
            }
            lastActivity = System.nanoTime();
            bytesRead += buf.readableBytes();
            if (replay != null) {
                replay.received(buf.readableBytes());
                heardAt = loopNanos();
            }
            if (buf.nioBufferCount() == 1) {
                conn.receiveData(buf.nioBuffer());
            } else {
                byte[] bytes = new byte[buf.readableBytes()];
                buf.readBytes(bytes);
                conn.receiveData(bytes, 0, bytes.length);
            }
        } finally {
            buf.release();
        }
        process();
        writePending(); // each read's replies count before the next read (§6.3); flushed when the reads are done
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        if (ctx == this.ctx) {
            flushNow();
        }
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (ctx == this.ctx && channel.isWritable()) {
            resumeReading(); // the peer took our replies (§6.3)
            scheduleFlush(); // queued parts go first
            refillAll();
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        if (ctx != this.ctx) { // a new transport that closed before the session was resumed on it
            ResumeHandshake attempt = ctx.pipeline().get(ResumeHandshake.class);
            attemptFailed(attempt != null ? attempt.failure() : ResumeHandshake.ENDED);
            return;
        }
        if (resumable()) {
            detach();
            return;
        }
        if (timer != null) {
            timer.cancel(false);
        }
        if (closeTimer != null) {
            closeTimer.cancel(false);
        }
        linkUp = false;
        conn.receiveEof();
        process();
        if (!ended) {
            ended(null, new ConnectionClosedException("the transport closed"));
        }
        active.completeExceptionally(new ConnectionClosedException("the transport closed before the connection was up"));
        closed.complete(null);
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof ChannelInputShutdownEvent) {
            if (ctx != this.ctx) {
                ctx.close();
                return;
            }
            if (resumable()) {
                ctx.close(); // the transport broke; channelInactive detaches the session (§16.3)
                return;
            }
            if (inputEnded) {
                return;
            }
            inputEnded = true;
            if (!discarding) {
                conn.receiveEof();
                process();
            }
            if (!ended) {
                ended(null, new ConnectionClosedException("the transport closed"));
            }
            // write what is queued (a goodbye, the last frames), then close (§9.3, §10)
            flushNow();
            ctx.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
            return;
        }
        ctx.fireUserEventTriggered(evt);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        LOG.log(System.Logger.Level.DEBUG, "transport error on " + describe(), cause);
        ctx.close(); // channelInactive ends the connection (§9.3)
    }

    // ---- events ---------------------------------------------------------------------------

    private void process() {
        List<Event> batch = conn.events();
        boolean[] moot = cancelledLater(batch);
        for (int i = 0; i < batch.size(); i++) {
            Event e = batch.get(i);
            if (ended && !(e instanceof Event.Closed)) {
                continue; // the connection ended while this batch was handled: the rest is moot
            }
            if (e instanceof Event.Element el) {
                RemoteSubscription<?> s = consuming.get(el.id());
                if (s != null) {
                    s.deliver(el.data());
                }
            } else if (e instanceof Event.Packed p) {
                RemoteSubscription<?> s = consuming.get(p.id());
                if (s != null) {
                    s.deliverPacked(p.count(), p.size(), p.data());
                }
            } else if (e instanceof Event.Demand d) {
                ServingStream s = serving.get(d.id());
                if (s != null && (moot == null || !moot[i])) {
                    s.refill();
                }
            } else if (e instanceof Event.ChannelOpened c) {
                channelNext = c.id(); // boxed: no id is free to mean "none"
            } else if (e instanceof Event.Subscribed s) {
                if (channelNext != null && channelNext == s.id()) {
                    channelNext = null;
                    openChannel(s.id(), s.name(), s.metadata());
                } else {
                    serve(s.id(), s.name(), s.metadata());
                }
            } else if (e instanceof Event.ChannelInput ci) {
                channelInput(ci.input());
            } else if (e instanceof Event.OnSubscribed o) {
                RemoteSubscription<?> s = consuming.get(o.id());
                if (s != null) {
                    s.onSubscribed(o.contentType()); // the media type the publisher stated (§17.2), or null
                }
            } else if (e instanceof Event.Cancelled c) {
                ServingStream s = serving.remove(c.id());
                if (s != null) {
                    s.cancelFromPeer();
                }
            } else if (e instanceof Event.Completed c) {
                RemoteSubscription<?> s = consuming.remove(c.id());
                if (s != null) {
                    s.completed();
                }
            } else if (e instanceof Event.Failed f) {
                RemoteSubscription<?> s = consuming.remove(f.id());
                if (s != null) {
                    s.failed(f.error(), f.code());
                }
            } else if (e instanceof Event.PeerHello h) {
                helloAt = System.nanoTime();
                resumeNegotiated(h);
                helloReceived(h);
                messages.hello();
                runAfterHello();
            } else if (e instanceof Event.Message m) {
                messages.received(m, facade);
            } else if (e instanceof Event.MessageCredit) {
                messages.credit();
            } else if (e instanceof Event.ExtensionMessage x) {
                resumeMessage(x);
            } else if (e instanceof Event.Closed c) {
                closedByProtocol(c);
            }
        }
        maybeAcknowledge();
        scheduleFlush();
    }

    /**
     * Which Demand events of {@code batch} belong to a subscription the peer cancels later in the
     * same batch (null: no cancel in it). The connection parsed the whole read before its events
     * are handled, so such an id may already be subscribed again: the cancelled stream must not
     * drain into the new one, and the peer wants none of those elements anyway (§5.4).
     */
    private static boolean[] cancelledLater(List<Event> batch) {
        boolean[] moot = null;
        Set<Long> cancelled = null;
        for (int i = batch.size() - 1; i >= 0; i--) {
            Event e = batch.get(i);
            if (e instanceof Event.Cancelled c) {
                if (cancelled == null) {
                    cancelled = new HashSet<>();
                    moot = new boolean[batch.size()];
                }
                cancelled.add(c.id());
            } else if (cancelled != null && e instanceof Event.Subscribed sub) {
                cancelled.remove(sub.id()); // events before it concern an earlier subscription of that id
            } else if (cancelled != null && e instanceof Event.Demand d) {
                moot[i] = cancelled.contains(d.id());
            }
        }
        return moot;
    }

    private void helloReceived(Event.PeerHello h) {
        if (options.credentials() == null || conn.state() != Connection.State.OPEN) {
            return;
        }
        if (!h.active().contains(FrameType.AUTH)) {
            goodbyeAndClose("authentication not possible: the server does not offer extension auth (id 2) (PROTOCOL.md §15.2)",
                    null, LINGER_MILLIS); // §10: this goodbye has no code
            return;
        }
        conn.sendExtension(FrameType.AUTHENTICATE, options.credentials().encode());
    }

    /**
     * The peer opened channel {@code name} (§21.3): its factory gets the input and a request and
     * makes the output, served as a publisher's (and tied to the input, §21.5). Refused with
     * onError as the other bindings do: {@code no channel named 'PATH' (PROTOCOL.md §21.3)}, code
     * 2, for a name no channel has or a factory that returns null; code 1 for a malformed name
     * (§5.5); code 9 {@code channel 'PATH' could not be created: its factory failed (PROTOCOL.md
     * §19.2)} for a factory that threw (a {@link RemoteStreamException} with a code: its text and
     * code). A refused channel's input ends with it; the connection goes on.
     */
    private void openChannel(long id, String name, io.rstreams.wire.SubscribeMetadata metadata) {
        Routes table = options.routes().channels();
        Routes.Match match = table == null ? null : table.resolve(name, facade, metadata);
        if (match == null) {
            conn.onError(id, Routes.unknownChannel(name), ErrorCode.UNKNOWN_PUBLISHER.value());
            return;
        }
        if (match.fault() != null) { // a malformed name: refused, not half understood (§5.5)
            conn.onError(id, "channel name '" + name + "' " + match.fault() + " (PROTOCOL.md §5.5)", ErrorCode.APPLICATION.value());
            return;
        }
        ChannelInput<byte[]> input = new ChannelInput<>(this, id, data -> data);
        Flow.Publisher<byte[]> output;
        String refusal = Routes.unknownChannel(name);
        long code = ErrorCode.UNKNOWN_PUBLISHER.value();
        try {
            output = table.channelFactory(match.route()).open(input, match.request());
        } catch (RuntimeException e) {
            output = null;
            if (e instanceof RemoteStreamException r && r.code().isPresent()) { // refused on purpose: its text and code
                refusal = ServingStream.text(e);
                code = r.code().getAsLong();
            } else {
                LOG.log(System.Logger.Level.WARNING, "the channel factory for '" + name + "' threw", e);
                refusal = Routes.channelFailed(name);
                code = ErrorCode.INTERNAL.value();
            }
        }
        if (output == null) {
            input.outputEnded(); // its input ends with it (§21.5)
            conn.onError(id, refusal, code);
            return;
        }
        inputs.put(id, input);
        Flow.Publisher<byte[]> source = output;
        Runnable tie = () -> {
            if (inputs.get(id) == input) {
                inputs.remove(id);
            }
            input.outputEnded();
        };
        if (!attach(id, name, subscriber -> source.subscribe(new Tied(subscriber, () -> runOnLoop(tie))), source, match.route())) {
            tie.run();
        }
    }

    /**
     * An input message (§21.4-§21.6): at the publisher end an element, the end, or a split element
     * too large (inputCancel already sent); at the opener end the peer's grant or its inputCancel.
     */
    private void channelInput(io.rstreams.wire.Channels.Input in) {
        if (in instanceof io.rstreams.wire.Channels.Input.Demand d) {
            ChannelSender<?> sender = senders.get(d.subscriber());
            if (sender != null) {
                sender.granted(d.n());
            }
        } else if (in instanceof io.rstreams.wire.Channels.Input.Cancelled c) {
            ChannelSender<?> sender = senders.remove(c.subscriber());
            if (sender != null) {
                sender.stop();
            }
        } else if (in instanceof io.rstreams.wire.Channels.Input.TooLarge big) {
            ChannelInput<byte[]> input = inputs.remove(big.subscriber());
            if (input != null) {
                input.tooLarge(big.reason());
            }
            scheduleFlush(); // the inputCancel
        } else if (in instanceof io.rstreams.wire.Channels.Input.Element el) {
            ChannelInput<byte[]> input = inputs.get(el.subscriber());
            if (input != null) {
                input.element(el.data());
            }
        } else if (in instanceof io.rstreams.wire.Channels.Input.Ended end) {
            ChannelInput<byte[]> input = inputs.remove(end.subscriber());
            if (input != null) {
                input.endedByOpener(end.error());
            }
        }
    }

    /**
     * A channel's output, its end tied to its input (§21.5): {@code onEnd} runs when it completes
     * or fails (before the subscription hears it) or is cancelled (by the peer, or the connection's end).
     */
    private static final class Tied implements Flow.Subscriber<byte[]>, Flow.Subscription {
        private final Flow.Subscriber<? super byte[]> downstream;
        private final Runnable onEnd;
        private Flow.Subscription upstream;
        private final java.util.concurrent.atomic.AtomicBoolean over = new java.util.concurrent.atomic.AtomicBoolean();

        Tied(Flow.Subscriber<? super byte[]> downstream, Runnable onEnd) {
            this.downstream = downstream;
            this.onEnd = onEnd;
        }

        private void end() {
            if (over.compareAndSet(false, true)) {
                onEnd.run();
            }
        }

        @Override
        public void onSubscribe(Flow.Subscription s) {
            upstream = s;
            downstream.onSubscribe(this);
        }

        @Override
        public void onNext(byte[] item) {
            downstream.onNext(item);
        }

        @Override
        public void onError(Throwable t) {
            end();
            downstream.onError(t);
        }

        @Override
        public void onComplete() {
            end();
            downstream.onComplete();
        }

        @Override
        public void request(long n) {
            upstream.request(n);
        }

        @Override
        public void cancel() {
            end();
            upstream.cancel();
        }
    }

    private void serve(long id, String name, io.rstreams.wire.SubscribeMetadata metadata) {
        Routes.Match match = options.routes().resolve(name, facade, metadata);
        Flow.Publisher<byte[]> publisher = null;
        String refusal = Routes.unknown(name);
        long code = ErrorCode.UNKNOWN_PUBLISHER.value();
        if (match != null && match.fault() != null) { // a malformed name: refused, not half understood (§5.5)
            refusal = "publisher name '" + name + "' " + match.fault() + " (PROTOCOL.md §5.5)";
            code = ErrorCode.APPLICATION.value();
        } else if (match != null) {
            try {
                publisher = match.route().factory().apply(match.request());
            } catch (RuntimeException e) {
                if (e instanceof RemoteStreamException r && r.code().isPresent()) { // refused on purpose: its text and code
                    refusal = ServingStream.text(e);
                    code = r.code().getAsLong();
                } else {
                    LOG.log(System.Logger.Level.WARNING, "the publisher factory for '" + name + "' threw", e);
                    refusal = Routes.failed(name);
                    code = ErrorCode.INTERNAL.value();
                }
            }
        }
        if (match == null && options.routes().channels() != null && options.routes().channels().resolve(name, facade) != null) {
            refusal = Routes.onlyAChannel(name); // a plain subscribe never reaches a channel (§21.3)
        }
        if (publisher == null) {
            conn.onError(id, refusal, code); // §19.2: 2 for a name nothing serves, 9 for a factory that threw
            return;
        }
        attach(id, name, publisher, publisher, match.route());
    }

    /**
     * Serves {@code publisher} on subscription {@code id}; {@code made}: what the factory returned
     * (its element size and media type, else the route's, §7, §17). False when its subscribe threw
     * (the subscription was refused).
     */
    private boolean attach(long id, String name, Flow.Publisher<byte[]> publisher, Flow.Publisher<byte[]> made, Routes.Route route) {
        int elementSize = made instanceof FixedSizePublisher f ? f.elementSize() : route.elementSize();
        String contentType = made instanceof ContentTypedPublisher t ? t.contentType() : route.contentType();
        ServingStream stream = new ServingStream(this, id, elementSize, contentType);
        serving.put(id, stream);
        try {
            publisher.subscribe(stream);
        } catch (RuntimeException e) { // rule 1.9 broken: a serving-side failure, as a factory's (§19.2)
            serving.remove(id);
            stream.cancelFromPeer();
            if (e instanceof RemoteStreamException r && r.code().isPresent()) { // on purpose: its text and code
                conn.onError(id, ServingStream.text(e), r.code().getAsLong());
            } else { // not the exception's message: it can hold what the peer must not see
                LOG.log(System.Logger.Level.WARNING, "the publisher for '" + name + "' threw in subscribe", e);
                conn.onError(id, Routes.subscribeFailed(name), ErrorCode.INTERNAL.value());
            }
            return false;
        }
        return true;
    }

    private void closedByProtocol(Event.Closed c) {
        boolean saidGoodbye = awaitingAnswer; // our goodbye went out earlier (an orderly close, §9.1)
        awaitingAnswer = false; // the peer's answer (or its end of input, or a violation) came: the close goes on below
        ProtocolException error = c.error();
        RuntimeException why = error != null
                ? new ConnectionClosedException(error.getMessage().equals(abortReason) ? abortText : error.getMessage(), c.code())
                : new ConnectionClosedException(c.reason() == null ? "the connection closed"
                        : "the peer said goodbye" + (c.reason().isEmpty() ? "" : ": " + c.reason()), c.code());
        ended(c.reason(), why);
        boolean weSentGoodbye = conn.pendingOutput() > 0; // our error goodbye, or our answer to the peer's
        // our error goodbye, or a violation read while our goodbye awaits its answer: nothing more
        // goes out (§9.1), but closing at once with the peer's input unread would reset the
        // transport, and the peer could lose our goodbye; so the close lingers as after an error goodbye
        boolean lingers = error != null && (weSentGoodbye || saidGoodbye);
        writePending();
        if (!channel.isActive() || inputEnded) {
            return; // the input-shutdown handler closes after the write
        }
        boolean canHalfClose = ctx.pipeline().get(WebSocketBridge.class) == null && ctx.pipeline().get(SslHandler.class) == null;
        if ((weSentGoodbye || lingers) && canHalfClose && channel instanceof DuplexChannel socket) {
            // §10: write the goodbye, close our sending side, keep reading (and discarding) until
            // the peer closes or the linger time is over, then close. An answer to the peer's
            // goodbye too: a peer that goes on writing after its goodbye (§9.1 says it must not)
            // would otherwise be reset by a close with its bytes unread, and could lose the
            // answer; one that does not closes at once and ends the linger with it.
            discarding = true;
            ctx.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(f -> socket.shutdownOutput());
            channel.eventLoop().schedule(this::closeAfterWait, LINGER_MILLIS, TimeUnit.MILLISECONDS);
        } else if (lingers) {
            // TLS and WebSocket cannot half-close: discard input until the peer closes or the linger time is over
            discarding = true;
            ctx.flush();
            channel.eventLoop().schedule(this::closeAfterWait, LINGER_MILLIS, TimeUnit.MILLISECONDS);
        } else {
            ctx.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
        }
    }

    /** Ends every stream in both directions; the connection is over. */
    private void ended(String reason, RuntimeException why) {
        if (ended) {
            return;
        }
        ended = true;
        closedError = why;
        if (channel != null) {
            resumeReading(); // to hear the peer's goodbye, or discard its input while lingering (§10)
        }
        if (replay != null && replay.token != null && options.resume().sessions() != null) {
            options.resume().sessions().forget(replay.token, this);
        }
        if (expiry != null) {
            expiry.cancel(false);
        }
        cancelStall();
        if (handshakeTimer != null) {
            handshakeTimer.cancel(false);
        }
        List<RemoteSubscription<?>> subs = new ArrayList<>(consuming.values());
        consuming.clear();
        for (RemoteSubscription<?> s : subs) {
            s.finish(why);
        }
        runAfterHello(); // they find the connection ended
        messages.closed(why);
        List<ServingStream> streams = new ArrayList<>(serving.values());
        serving.clear();
        for (ServingStream s : streams) {
            s.cancelFromPeer();
        }
        List<ChannelSender<?>> sending = new ArrayList<>(senders.values());
        senders.clear();
        for (ChannelSender<?> sender : sending) {
            sender.stop(); // the input never outlives its subscription (§21.5)
        }
        List<ChannelInput<byte[]>> open = new ArrayList<>(inputs.values());
        inputs.clear();
        for (ChannelInput<byte[]> input : open) {
            input.outputEnded(); // the input never outlives its subscription (§21.5)
        }
    }

    /** Orderly close from this end (§9.1): {@link #closeOrderly} on the I/O thread; completes once the transport closed. */
    CompletableFuture<Void> closeAsync(String reason) {
        execute(() -> closeOrderly(reason));
        return closed;
    }

    /**
     * Refuses the peer at its clientHello (a server over its connection limit, PROTOCOL.md §10):
     * goodbye {@code reason} with code 8 (unavailable) when the hello makes error-codes active;
     * nothing the peer sent after its hello is served, and what it sends later is discarded for
     * the linger time at most, as after any error goodbye. Called on the I/O thread before any read.
     */
    void refuseAtHello(String reason) {
        conn.refuseAtHello(reason, ErrorCode.UNAVAILABLE);
    }

    /**
     * An orderly close from this end, as rstreams' Connection.aclose (a client's close(), a
     * server's close() on each connection): goodbye {@code reason} with code 0 (normal), then
     * the peer's input is still read, anything but its goodbye discarded (elements in flight
     * included), and its answering goodbye or its end of input closes the transport, after
     * {@link #CLOSE_MILLIS} at most (§9.1); a violation ends the wait, and the transport closes
     * as after an error goodbye (§10). Before the peer's hello there is no answer to wait for (the peer may not speak
     * RS.io): the goodbye, without a code (§19.1), is written and the transport closed as after
     * an error goodbye (at once where the peer closes on reading it; its input discarded
     * meanwhile, for the linger time at most); a transport still in its TLS or WebSocket
     * handshake is closed. Called on the I/O thread; the future completes once the connection is over.
     */
    CompletableFuture<Void> closeOrderly(String reason) {
        if (ctx == null || closed.isDone() || retired) { // retired: its transport went on under a resumed session
            return CompletableFuture.completedFuture(null);
        }
        if (linkUp && !ended && conn.state() == Connection.State.AWAITING_HELLO) {
            // §19.1: no code before the hellos; closed as after an error goodbye (half-close and
            // linger), so that a hello already on its way does not make the close a reset
            ended(null, closedByThisEnd(reason));
            conn.abort(reason);
            process();
        } else if (!linkUp && channel.isActive() && !ended && conn.state() == Connection.State.AWAITING_HELLO) {
            channel.close(); // in its TLS or WebSocket handshake: no RS.io goes out before it
        } else {
            goodbyeAndClose(reason, ErrorCode.NORMAL, CLOSE_MILLIS); // §19.2: an orderly close, code 0
        }
        return closed;
    }

    private static ConnectionClosedException closedByThisEnd(String reason) {
        return new ConnectionClosedException("the connection was closed by this end" + (reason.isEmpty() ? "" : ": " + reason));
    }

    /** This endpoint's transport continues another session (a resume): it stops without a word. */
    void retire() {
        ended = true;
        retired = true;
        if (timer != null) {
            timer.cancel(false);
        }
        if (handshakeTimer != null) {
            handshakeTimer.cancel(false);
        }
        if (replay != null && replay.token != null && options.resume() != null && options.resume().sessions() != null) {
            options.resume().sessions().forget(replay.token, this);
        }
    }

    /**
     * Goodbye {@code reason}, then the peer's input is read until its answering goodbye, or its
     * end of input, closes the transport (§9.1); after {@code waitMillis} it is closed anyway.
     */
    private void goodbyeAndClose(String reason, ErrorCode code, long waitMillis) {
        if (ended || conn.state() == Connection.State.CLOSED) {
            if (channel.isActive() && conn.state() == Connection.State.CLOSED && !discarding) {
                channel.close();
            }
            return;
        }
        conn.goodbye(reason, code);
        ended(null, closedByThisEnd(reason));
        flushNow();
        if (!linkUp) {
            closed.complete(null); // a session waiting for a resume: no transport to close
            return;
        }
        awaitingAnswer = true;
        closeTimer = channel.eventLoop().schedule(this::closeAfterWait, waitMillis, TimeUnit.MILLISECONDS);
    }

    /**
     * A bounded wait is over (the linger of §9.1 and §10, or the wait for the answer to our
     * goodbye): the transport closes. Output still unsent then (a peer that has not read even
     * our goodbye; what a TLS layer holds included, see {@link #unsent}) is dropped, and over
     * TCP the close is then a reset (SO_LINGER 0, as rstreams aborts its transport): a plain
     * close would end the peer's input after whatever part of our output the kernel held, cut
     * anywhere, as if the stream had ended there (a truncated frame, §9.3, or an end without
     * goodbye). Such a close goes straight to the socket, past the TLS and WebSocket layers,
     * which would otherwise first try to flush a close_notify or a close frame behind output
     * the peer does not read (Netty's TLS layer waits up to 3 s for that). A Unix socket cannot be reset (Linux
     * ignores SO_LINGER there): the peer reads what its socket holds, then its end of input;
     * since the goodbye came last and not all of it went out, that end is an error for the peer
     * (an end inside a frame, or without a goodbye, §9.3), never an orderly one.
     */
    private void closeAfterWait() {
        if (!channel.isActive()) {
            return;
        }
        if (unsent() == 0) {
            channel.close();
            return;
        }
        if (channel instanceof io.netty.channel.socket.SocketChannel) {
            channel.config().setOption(io.netty.channel.ChannelOption.SO_LINGER, 0);
        }
        channel.pipeline().firstContext().close(); // from the first handler: only the socket's close comes before it
    }

    // ---- extension resume (§16) ----------------------------------------------------------

    private void resumeNegotiated(Event.PeerHello h) {
        if (replay == null) {
            return;
        }
        if (conn.state() != Connection.State.OPEN) {
            replay = null; // a violation in the hello's read closed the connection: no session to offer
            return;
        }
        if (!h.active().contains(FrameType.RESUME_EXTENSION)) {
            replay = null; // the peer did not agree: no buffer kept (§16.9)
            return;
        }
        resumeActive = true;
        watchStall();
        if (conn.side() == Connection.Side.SERVER) {
            byte[] token = new byte[16];
            new java.security.SecureRandom().nextBytes(token);
            replay.token = token;
            conn.sendExtension(FrameType.RESUME_TOKEN, token);
            options.resume().sessions().register(token, this);
        }
    }

    private void resumeMessage(Event.ExtensionMessage x) {
        if (!resumeActive) {
            return;
        }
        try {
            switch (x.type()) {
                case FrameType.RESUME_TOKEN -> {
                    if (conn.side() == Connection.Side.SERVER || replay.token != null) {
                        throw new ProtocolException("message type 0x88 is not allowed inside a session (PROTOCOL.md §16.2)");
                    }
                    if (x.payload().length < 1 || x.payload().length > 64) {
                        throw new ProtocolException("resumeToken of " + x.payload().length
                                + " bytes; a token is 1 to 64 bytes (PROTOCOL.md §16.2)");
                    }
                    replay.token = x.payload();
                }
                case FrameType.RESUME_ACK -> {
                    boolean full = replay.unacked() >= replay.bound;
                    replay.ack(ResumeFrames.position(x.payload(), "resumeAck"));
                    replay.ackReceived(2L + x.payload().length);
                    if (full && replay.unacked() < replay.bound) {
                        refillAll(); // production waited at the replay bound, not for the channel (§16.4)
                    }
                }
                default -> throw new ProtocolException(String.format(
                        "message type 0x%02x is not allowed inside a session (PROTOCOL.md §16.2)",
                        x.type()));
            }
        } catch (ProtocolException e) {
            conn.abort(e.getMessage(), e.code());
            process(); // its goodbye ends the connection now (§10), not at the peer's next read
        }
    }

    /** Acknowledges what arrived: at once after a quarter of the buffer, else after the ack delay (§16.4). */
    private void maybeAcknowledge() {
        if (!resumeActive || replay == null || conn.state() != Connection.State.OPEN) {
            return;
        }
        long pending = replay.unacknowledgedReceived();
        if (pending >= replay.bound / 4) {
            acknowledge();
        } else if (pending > 0 && !ackQueued) {
            ackQueued = true;
            loop().schedule(this::acknowledge, options.resume().ackDelay().toNanos(), TimeUnit.NANOSECONDS);
        }
    }

    private void acknowledge() {
        ackQueued = false;
        if (!resumeActive || replay == null || conn.state() != Connection.State.OPEN || replay.unacknowledgedReceived() <= 0) {
            return;
        }
        replay.acknowledged();
        conn.sendExtension(FrameType.RESUME_ACK, ResumeFrames.varint(replay.receivedPosition()));
        scheduleFlush();
    }

    /** Whether a broken transport should be replaced rather than end the connection (§16.3). */
    private boolean resumable() {
        return resumeActive && replay != null && replay.token != null && !ended && conn.state() == Connection.State.OPEN;
    }

    /** The transport broke: the client reconnects, the server waits for a resume (§16.3). */
    private void detach() {
        linkUp = false;
        cancelStall();
        resumeReading(); // the unread timer is the broken transport's, not the session's
        if (conn.side() == Connection.Side.CLIENT) {
            attempts = 0;
            attemptFailed(null);
        } else if (expiry == null) {
            expiry = loop().schedule(() -> sessionFailed("the session was not resumed within "
                    + PythonG.seconds(options.resume().sessionTimeout()) + " s (PROTOCOL.md §16.3)"),
                    options.resume().sessionTimeout().toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    /** The time on this connection's loop (virtual on a test's EmbeddedChannel), in nanoseconds. */
    private long loopNanos() {
        return loop() instanceof io.netty.util.concurrent.AbstractScheduledEventExecutor clock ? clock.ticker().nanoTime() : System.nanoTime();
    }

    /** The stall timeout in nanoseconds, or -1 when it is off (§16.7). */
    private long stallNanos() {
        Duration stall = options.resume() != null ? options.resume().stallTimeout() : null;
        return stall != null ? stall.toNanos() : -1;
    }

    /** Arms the stall timer for the current transport, due the stall timeout after it was last heard (§16.7); off: none. */
    private void watchStall() {
        cancelStall();
        if (!resumeActive || !linkUp || ended || stallNanos() < 0) {
            return;
        }
        long left = heardAt + stallNanos() - loopNanos();
        stallTimer = loop().schedule(this::stallCheck, Math.max(0, left), TimeUnit.NANOSECONDS);
    }

    private void cancelStall() {
        if (stallTimer != null) {
            stallTimer.cancel(false);
            stallTimer = null;
        }
    }

    /**
     * The stall timer fell due: heard from since, it is armed again; else the transport is taken
     * for dead (a link that vanished without a reset) and closed at once, past the TLS and
     * WebSocket layers, and the session recovers as from any break (§16.3): the client
     * reconnects, the server waits for its resume.
     */
    private void stallCheck() {
        stallTimer = null;
        if (!resumable() || !linkUp) {
            return;
        }
        if (loopNanos() - heardAt < stallNanos()) {
            watchStall();
            return;
        }
        if (channel instanceof io.netty.channel.socket.SocketChannel) {
            channel.config().setOption(io.netty.channel.ChannelOption.SO_LINGER, 0);
        }
        channel.pipeline().firstContext().close(); // its channelInactive detaches the session
    }

    /**
     * A client's attempt to resume did not work out ({@code why}; null: the transport just broke, no
     * attempt yet): try again after a backoff, or give up, saying why the last attempt failed, as
     * rstreams does.
     */
    void attemptFailed(String why) {
        if (ended || linkUp || conn.side() != Connection.Side.CLIENT || options.resume() == null) {
            return;
        }
        attempts++;
        if (attempts > ResumeFrames.ATTEMPTS) {
            sessionFailed("could not resume the session in " + ResumeFrames.ATTEMPTS + " attempt(s): " + why + " (PROTOCOL.md §16.3)");
            return;
        }
        long delay = Math.min(ResumeFrames.MAX_BACKOFF_MILLIS, ResumeFrames.BACKOFF_MILLIS << (attempts - 1));
        int attempt = attempts;
        loop().schedule(() -> {
            if (!ended && !linkUp) {
                options.resume().reconnector().reconnect(this, attempt);
            }
        }, delay, TimeUnit.MILLISECONDS);
    }

    /** The session cannot go on: every stream fails (§16.6). */
    void sessionFailed(String reason) {
        if (ended) {
            return;
        }
        ended(null, new ConnectionClosedException(reason));
        if (timer != null) {
            timer.cancel(false);
        }
        if (channel.isActive()) {
            channel.close();
        }
        active.completeExceptionally(new ConnectionClosedException(reason));
        closed.complete(null);
    }

    /**
     * Continues the session on a new transport whose pipeline holds this endpoint at {@code newCtx}:
     * the peer has received our stream up to {@code position}. The server first tells the client
     * how much of its stream arrived ({@code resumed}); then both replay from where the other
     * stopped (§16.3). {@code rest} is what the new transport brought after the exchange.
     */
    void attach(ChannelHandlerContext newCtx, long position, boolean sendResumed, ByteBuf rest) {
        List<java.nio.ByteBuffer> again = ended ? null : replay.from(position);
        if (again == null) {
            String reason = "position " + Long.toUnsignedString(position) + " is outside the replay buffer (" + replay.ackedPosition()
                    + ".." + replay.sentPosition() + "): the two sides disagree on what was received (PROTOCOL.md §16.3)";
            if (sendResumed) {
                newCtx.writeAndFlush(Unpooled.wrappedBuffer(ResumeFrames.refused(reason))).addListener(ChannelFutureListener.CLOSE);
            } else {
                newCtx.close();
            }
            rest.release();
            sessionFailed("the session could not be resumed: " + reason); // rstreams' words, either side (§16.6)
            return;
        }
        ChannelHandlerContext old = this.ctx;
        resumeReading(); // a stalled link's pause and unread timer do not carry over to the new transport
        this.ctx = newCtx;
        this.channel = newCtx.channel();
        if (linkUp && old != null) {
            old.close(); // a stalled link: the new transport replaces it (§16.3)
        }
        linkUp = true;
        attempts = 0;
        if (expiry != null) {
            expiry.cancel(false);
            expiry = null;
        }
        lastActivity = System.nanoTime();
        heardAt = loopNanos(); // the peer was heard on this transport: its resume, or the answer to ours
        watchStall();
        if (sendResumed) {
            newCtx.write(Unpooled.wrappedBuffer(ResumeFrames.resumed(replay.receivedPosition())));
        }
        newCtx.write(Unpooled.wrappedBuffer(again.toArray(new java.nio.ByteBuffer[0])));
        flushNow();
        if (rest.isReadable()) {
            channelRead(newCtx, rest);
        } else {
            rest.release();
        }
        refillAll();
    }

    // ---- the handshake timeout (an accepting end's) ----------------------------------------

    /**
     * The handshake timeout passed (as rstreams' handshake_timeout): a peer that has not sent
     * its clientHello is said goodbye and closed (one still in its TLS or WebSocket handshake is
     * closed: no RS.io goes out before it); one whose credentials are not settled within the
     * timeout of its hello, likewise (§15.3). A slow peer trickling bytes keeps the idle clock
     * going, never this one.
     */
    private void handshakeExpired() {
        handshakeTimer = null;
        if (ended) {
            return;
        }
        Duration limit = options.handshakeTimeout();
        String seconds = PythonG.seconds(limit);
        if (conn.state() == Connection.State.AWAITING_HELLO) {
            if (!linkUp) {
                channel.close();
                return;
            }
            boolean client = conn.side() == Connection.Side.CLIENT;
            String reason = "handshake timeout (no " + (client ? "serverHello" : "clientHello") + " within " + seconds + " s)";
            if (client) { // its streams fail as over a broken connection, naming the option (as rstreams' connect)
                abortReason = reason;
                abortText = reason + ": the server did not say hello (RsioClient.Builder.handshakeTimeout)";
            }
            conn.abort(reason);
            process();
        } else if (conn.state() == Connection.State.OPEN && conn.authenticating()) {
            long left = helloAt + limit.toNanos() - System.nanoTime();
            if (left > 0) {
                handshakeTimer = channel.eventLoop().schedule(this::handshakeExpired, left, TimeUnit.NANOSECONDS);
                return;
            }
            conn.abort("authentication timeout (not settled within " + seconds + " s of the hello) (PROTOCOL.md §15.3)",
                    ErrorCode.TIMEOUT);
            process();
        }
    }

    // ---- keepalive (§14) ------------------------------------------------------------------

    private long timerPeriodMillis() {
        long period = Long.MAX_VALUE;
        if (options.keepalive() != null) {
            period = Math.min(period, options.keepalive().toMillis() / 2);
        }
        if (options.idleTimeout() != null) {
            period = Math.min(period, Math.max(10, options.idleTimeout().toMillis() / 4));
        }
        return period == Long.MAX_VALUE ? 0 : Math.max(10, period);
    }

    private void tick() {
        if (ended || !linkUp || conn.state() != Connection.State.OPEN) {
            return; // a detached session waits for its resume, not for the idle clock
        }
        long idle = System.nanoTime() - lastActivity;
        if (options.idleTimeout() != null && idle >= options.idleTimeout().toNanos() && resumable()) {
            lastActivity = System.nanoTime();
            ctx.close(); // §14.2 on a resumable session: the transport is taken for broken, not the session
            return;
        }
        if (options.idleTimeout() != null && idle >= options.idleTimeout().toNanos()) {
            String seconds = PythonG.seconds(options.idleTimeout());
            conn.abort("idle timeout: nothing received for " + seconds + " s (PROTOCOL.md §14.2)", ErrorCode.TIMEOUT);
            process();
            return;
        }
        long now = System.nanoTime();
        if (options.keepalive() != null && idle >= options.keepalive().toNanos()
                && now - lastPing >= options.keepalive().toNanos()
                && conn.activeExtensions().contains(FrameType.KEEPALIVE)) {
            lastPing = now;
            long before = lastActivity;
            byte[] payload = new byte[8];
            long n = ++pingCounter;
            for (int i = 0; i < 8; i++) {
                payload[i] = (byte) (n >>> (56 - 8 * i));
            }
            conn.sendExtension(FrameType.PING, payload);
            flushNow();
            lastActivity = before; // our own ping is no sign of the peer's life
        }
    }
}
