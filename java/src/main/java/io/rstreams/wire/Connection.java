package io.rstreams.wire;

import io.rstreams.wire.StreamState.Signal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One RS.io connection's protocol state, without I/O (PROTOCOL.md §4-§12).
 *
 * <p>Theory of operation: the transport feeds what it reads to {@link #receiveData} (and
 * {@link #receiveEof} when the input ends), then takes {@link #dataToSend} and writes it, then
 * handles {@link #events}. Calls such as {@link #subscribe}, {@link #request} or
 * {@link #onNext} queue bytes too. Receiving produces output of its own (pongs, cancel
 * acknowledgements, rule 3.9 refusals, the answering goodbye), so after any call: write
 * {@code dataToSend()}, then handle {@code events()}.
 *
 * <p>Both directions live here (§1, §5.1): subscriptions we made on the peer's publishers
 * ("ours", keyed by our ids, which this class allocates) and the peer's subscriptions on ours
 * ("theirs", keyed by the peer's ids). Every signal goes through {@link StreamState}'s table.
 * Demand is counted at both ends and saturates at {@link Long#MAX_VALUE} (§6.1).
 *
 * <p>Two kinds of error are kept apart: calling this object wrong throws
 * {@link IllegalStateException} or {@link IllegalArgumentException} at once; the peer breaking
 * the protocol queues a goodbye naming the rule and section, moves to {@link State#CLOSED} and
 * ends with {@link Event.Closed} carrying the {@link ProtocolException}. Not thread-safe: one
 * thread (an event loop) drives it.
 *
 * <p>Extension error-codes (§19), when both hellos list it: an onError or goodbye this end
 * sends with a code goes out right after its errorCode or goodbyeCode, in one write, so nothing
 * comes between them; a qualifier received is kept ({@code qualified}) and checked against the
 * very next message, whose event then carries the code.
 *
 * <p>Extensions content-types (§17) and metadata (§18) are qualifiers too: a contentType received
 * is held ({@code heldType}) for the onSubscribe that must come next, whose {@link Event.OnSubscribed}
 * carries the media type; a subscribeMetadata ({@code heldMetadata}) for the subscribe that must
 * come next, whose {@link Event.Subscribed} carries the entries. Sending, each goes right before
 * the message it qualifies, in the same write, and only while its extension is active.
 */
public final class Connection {
    /** Which end opened the transport (§1). */
    public enum Side {
        /** The end that opened the transport. */
        CLIENT,
        /** The end that accepted it. */
        SERVER
    }

    /** The connection's state (§12). */
    public enum State {
        /** Our hello is sent; the peer's has not arrived. */
        AWAITING_HELLO,
        /** Both hellos seen. */
        OPEN,
        /** We said goodbye and wait for the answer. */
        CLOSING,
        /** Over. */
        CLOSED
    }

    /** Demand that means "unbounded" (§6.1, rule 3.17). */
    public static final long UNBOUNDED = Long.MAX_VALUE;

    private static final int PING_PAYLOAD = 8;

    private final Side side;
    private final Limits limits;
    private final Set<Long> offered;
    private final FrameParser parser;
    private final FrameWriter out = new FrameWriter();
    private final ArrayDeque<Event> events = new ArrayDeque<>();
    private final Map<Long, Ours> ours = new HashMap<>();
    private final Map<Long, Theirs> theirs = new HashMap<>();
    private final Map<PartKey, Parts> partials = new HashMap<>();
    private final ArrayDeque<Long> splitting = new ArrayDeque<>(); // peer ids with queued output, round robin
    private long partialBytes;
    private State state = State.AWAITING_HELLO;
    private boolean helloReceived;
    private Set<Long> active = Set.of();
    private boolean codes; // extension error-codes is active (§19)
    private ProtocolException refusal; // refuseAtHello's, thrown once the peer's hello is read
    private boolean qualified; // an errorCode or goodbyeCode was read: the next message must be what it qualifies
    private boolean qualifiesGoodbye;
    private long qualifiedId;
    private long qualifiedCode;
    private boolean contentTypes; // extension content-types is active (§17)
    private boolean metadataActive; // extension metadata is active (§18)
    private ContentTypes.Announced heldType; // a contentType read: the next message must be its onSubscribe (§17.1)
    private SubscribeMetadata.Received heldMetadata; // a subscribeMetadata read: the next message must be its subscribe (§18.1)
    private long nextId = 1;
    private final AuthGate auth; // null: this end checks no credentials
    private final Messages messages; // null: extension messages not offered (§20)
    private final Channels channels; // null: extension channels not offered (§21)
    private final List<Map.Entry<Long, Theirs>> heldOrder = new ArrayList<>(); // subscribes waiting for the authenticate

    /**
     * The parts of one split element received so far (§8). The parser gives every payload an
     * array of its own, so the parts are kept as they came and copied once, into an array of
     * the element's exact size, when the last one arrives.
     */
    private static final class Parts {
        private final List<byte[]> parts = new ArrayList<>();
        private int size; // <= maxElementSize, an int: checked before every add

        void add(byte[] part) {
            parts.add(part);
            size += part.length;
        }

        int size() {
            return size;
        }

        byte[] join() {
            byte[] whole = new byte[size];
            int at = 0;
            for (byte[] part : parts) {
                System.arraycopy(part, 0, whole, at, part.length);
                at += part.length;
            }
            return whole;
        }
    }

    /** A subscription we made: its state, the demand we granted and not yet used, its elementSize. */
    private static final class Ours {
        StreamState state = StreamState.SUBSCRIBED;
        long outstanding;
        long elementSize;
    }

    /**
     * A subscription the peer made on us: its state, the demand (credit) we may still use, and
     * output waiting behind a split element (elements and the terminal signal, in order).
     */
    private static final class Theirs {
        StreamState state = StreamState.SUBSCRIBED;
        long credit;
        long elementSize;
        String heldName;
        SubscribeMetadata heldMetadata = SubscribeMetadata.EMPTY; // the held subscribe's (§18.1)
        boolean cancelledWhileHeld; // acknowledged in its turn, after authenticated (§15.3)
        boolean channel; // the held subscribe opens a channel (§21.3)
        final ArrayDeque<Object> queued = new ArrayDeque<>();
        long queuedBytes;
        int offset; // how much of the head element's parts are sent
    }

    /** A terminal signal queued behind split elements: onError (with its code, or null) if {@code error} is set, else onComplete. */
    private record Terminal(String error, Long code) {}

    private record PartKey(long id, long elementId) {}

    /**
     * A connection whose hello (offering {@code extensions}) is queued at once (§4.1).
     *
     * @param side which end opened the transport
     * @param limits what this end accepts (§11)
     * @param extensions the extension ids this end offers (§4.4)
     */
    public Connection(Side side, Limits limits, Set<Long> extensions) {
        this(side, limits, extensions, null);
    }

    /**
     * A server connection that requires extension auth (§15): {@code authenticator} says whether
     * credentials are accepted; subscribes are held until the client's authenticate is settled.
     *
     * @param side which end opened the transport ({@link Side#SERVER} if {@code authenticator} is given)
     * @param limits what this end accepts (§11)
     * @param extensions the extension ids this end offers (with {@link FrameType#AUTH} if {@code authenticator} is given)
     * @param authenticator accepts or refuses credentials (a throw refuses them: the connection's
     *     with goodbye {@code authentication failed (PROTOCOL.md §15.3)}, a subscribe's own with
     *     onError {@code unauthenticated: ...}, both code 3); null: no authentication required
     */
    public Connection(Side side, Limits limits, Set<Long> extensions, java.util.function.Predicate<Credentials> authenticator) {
        this(side, limits, extensions, authenticator, (Authorizer) null);
    }

    /**
     * A server connection that requires extension auth (§15) and authorizes every subscribe:
     * {@code authorizer} is asked, with the credentials the subscribe goes with (its own
     * subscribeCredentials, else the connection's) and the name as written (with its query),
     * whether it may go on; anything but true (a throw included) refuses it with onError
     * {@code unauthorized: subscribe to 'PATH' is not allowed for this principal (PROTOCOL.md
     * §15.4)} and code 4, and the connection goes on.
     *
     * @param authenticator accepts or refuses credentials (a throw refuses them: the connection's
     *     with goodbye {@code authentication failed (PROTOCOL.md §15.3)}, a subscribe's own with
     *     onError {@code unauthenticated: ...}, both code 3); null: no authentication required
     * @param authorizer whether those credentials may subscribe to that name; null: every name
     *     (without {@code authenticator}: asked with null credentials, §15.2)
     */
    public Connection(Side side, Limits limits, Set<Long> extensions, java.util.function.Predicate<Credentials> authenticator,
            java.util.function.BiPredicate<Credentials, String> authorizer) {
        this(side, limits, extensions, authenticator, authorizer == null ? null
                : (Authorizer) (credentials, name, metadata) -> authorizer.test(credentials, name) ? null : Authorizer.unauthorized(name));
    }

    /**
     * A server connection that requires extension auth (§15) and authorizes every subscribe with
     * {@code authorizer}, which sees the credentials the subscribe goes with, the name as written
     * and the subscribe's metadata (§18.1), and answers null to let it go on or the refusal to
     * send (its text and code; a throw refuses with code 4); the connection goes on either way.
     *
     * @param authorizer null: every name (without {@code authenticator}, the server checks no
     *     credentials and asks it about every subscribe with null ones, §15.2)
     */
    public Connection(Side side, Limits limits, Set<Long> extensions, java.util.function.Predicate<Credentials> authenticator,
            Authorizer authorizer) {
        if ((authenticator != null || authorizer != null) && side != Side.SERVER) {
            throw new IllegalArgumentException("only a server checks credentials (PROTOCOL.md §15)");
        }
        if (authenticator != null && !extensions.contains(FrameType.AUTH)) {
            throw new IllegalArgumentException("a server that checks credentials must offer extension auth (id 2)");
        }
        // an authorizer alone: auth is not offered, every client is served unauthenticated and
        // each subscribe and message asked about with null credentials, as rstreams' serve(authorize=...)
        this.auth = authenticator == null && authorizer == null ? null : new AuthGate(authenticator, authorizer, limits.maxSubscriptions());
        this.side = side;
        this.limits = limits;
        this.offered = Set.copyOf(extensions);
        this.parser = new FrameParser(limits);
        this.messages = offered.contains(FrameType.MESSAGES) ? new Messages(this) : null;
        this.channels = offered.contains(FrameType.CHANNELS) ? new Channels(limits, this) : null;
        out.write(new Frame.Hello(side == Side.SERVER, 0, List.copyOf(new LinkedHashSet<>(extensions))), 0);
    }

    /** @return where the connection is (§12) */
    public State state() {
        return state;
    }

    /** @return which end this is */
    public Side side() {
        return side;
    }

    /** @return the limits this end enforces (§11) */
    public Limits limits() {
        return limits;
    }

    /** The extensions both hellos list (empty until the peer's hello arrived), §4.4. */
    public Set<Long> activeExtensions() {
        return active;
    }

    /** Extension messages (§20) on this connection: its credit, sends; null when this end does not offer id 7. */
    public Messages messages() {
        return messages;
    }

    /** Whether the peer's hello has been received. */
    public boolean helloReceived() {
        return helloReceived;
    }

    /** Bytes queued and not yet taken by {@link #dataToSend}. */
    public int pendingOutput() {
        return out.size();
    }

    /** The bytes to write to the transport, in order; empties the queue. */
    public byte[] dataToSend() {
        return out.take();
    }

    /**
     * The bytes to write, in order, as buffers; large element payloads are views of the arrays
     * given to {@link #onNext} (not copied). Empties the queue.
     */
    public List<java.nio.ByteBuffer> buffersToSend() {
        return out.takeBuffers();
    }

    /** The events found since the last call, in order; empties the queue. */
    public List<Event> events() {
        List<Event> list = new ArrayList<>(events);
        events.clear();
        return list;
    }

    /** How many subscriptions the peer holds open on us. */
    public int peerSubscriptions() {
        return theirs.size();
    }

    // ---- receiving ------------------------------------------------------------------------

    /** Feeds bytes read from the transport. Input after the connection closed is discarded. */
    public void receiveData(byte[] data, int off, int len) {
        if (state == State.CLOSED) {
            return;
        }
        parser.feed(data, off, len);
        parse();
    }

    /** Feeds the remaining bytes of {@code data} (consumed). Input after the connection closed is discarded. */
    public void receiveData(java.nio.ByteBuffer data) {
        if (state == State.CLOSED) {
            data.position(data.limit());
            return;
        }
        parser.feed(data);
        parse();
    }

    private void parse() {
        try {
            for (Frame f = parser.next(); f != null && state != State.CLOSED; f = state == State.CLOSED ? null : parser.next()) {
                receive(f);
            }
        } catch (ProtocolException e) {
            fail(e);
        }
    }

    /** The transport's input ended (idempotent). */
    public void receiveEof() {
        if (state == State.CLOSED) {
            return;
        }
        ProtocolException truncated = parser.eof();
        if (state == State.CLOSING && truncated == null) {
            close(null, null, null);
        } else if (truncated != null) {
            fail(truncated);
        } else {
            close(null, new ProtocolException(
                    "the peer closed the connection without a goodbye (PROTOCOL.md §9.3)"), null);
        }
    }

    private void receive(Frame f) throws ProtocolException {
        if (!helloReceived) {
            boolean peerKind = side == Side.CLIENT ? FrameType.SERVER_HELLO == f.type() : FrameType.CLIENT_HELLO == f.type();
            if (f instanceof Frame.Hello h && peerKind) {
                hello(h);
            } else if (f instanceof Frame.Goodbye g) {
                goodbyeReceived(g, null); // error-codes is not active before the hello (§19.1)
            } else {
                throw new ProtocolException("the first message must be " + (side == Side.CLIENT ? "ServerHello" : "ClientHello")
                        + ", got " + frameName(f) + " (PROTOCOL.md §4.1)");
            }
            return;
        }
        if (state == State.CLOSING) {
            if (f instanceof Frame.Goodbye) {
                Long code = qualified && qualifiesGoodbye ? qualifiedCode : null;
                close(null, null, code); // the answer, or a simultaneous goodbye (§9.2)
            } else if (codes && f instanceof Frame.Extension x && x.type() == FrameType.GOODBYE_CODE) {
                qualifierReceived(x); // the code of the answering goodbye (§19.1)
            }
            return; // anything else is discarded after our goodbye (§9.1)
        }
        Long code = qualified ? qualifiedCode(f) : null;
        String contentType = heldType == null ? null : heldTypeFor(f);
        SubscribeMetadata metadata = heldMetadata == null ? SubscribeMetadata.EMPTY : heldMetadataFor(f);
        if (f instanceof Frame.OnNext n) {
            onNextReceived(n.subscriber(), n.element());
        } else if (f instanceof Frame.Request r) {
            requestReceived(r.subscriber(), r.demand());
        } else if (f instanceof Frame.Subscribe s) {
            subscribeReceived(s, metadata);
        } else if (f instanceof Frame.Cancel c) {
            cancelReceived(c.subscriber());
        } else if (f instanceof Frame.OnSubscribe o) {
            onSubscribeReceived(o.subscriber(), o.elementSize(), contentType);
        } else if (f instanceof Frame.OnNextPacked p) {
            packedReceived(p);
        } else if (f instanceof Frame.OnNextPart p) {
            partReceived(p);
        } else if (f instanceof Frame.OnComplete c) {
            terminalReceived(c.subscriber(), null, null);
        } else if (f instanceof Frame.OnError e) {
            terminalReceived(e.subscriber(), e.error(), code);
        } else if (f instanceof Frame.Goodbye g) {
            goodbyeReceived(g, code);
        } else if (f instanceof Frame.Extension x) {
            extensionReceived(x);
        } else {
            throw new ProtocolException("unexpected " + frameName(f) + ": the handshake is over or it is ours (PROTOCOL.md §4.1)");
        }
    }

    /** What rstreams calls a received message in a handshake error (its class name there: ClientHello, OnNext, ...). */
    private static String frameName(Frame f) {
        if (f instanceof Frame.Hello h) {
            return h.fromServer() ? "ServerHello" : "ClientHello";
        }
        if (f instanceof Frame.OnNextPart p) {
            return p.last() ? "OnNextLastPart" : "OnNextPart";
        }
        if (f instanceof Frame.Extension) {
            return "ExtensionMessage";
        }
        return f.getClass().getSimpleName(); // Goodbye, Subscribe, Request, Cancel, OnSubscribe, OnNext, ...
    }

    private void hello(Frame.Hello h) throws ProtocolException {
        if (h.version() != 0) {
            throw new ProtocolException("unsupported protocol version " + h.version()
                    + "; this endpoint speaks version 0 (PROTOCOL.md §4.2)");
        }
        helloReceived = true;
        Set<Long> both = new LinkedHashSet<>();
        for (long e : h.extensions()) {
            if (offered.contains(e)) {
                both.add(e);
            }
        }
        active = Set.copyOf(both);
        codes = active.contains(FrameType.ERROR_CODES);
        contentTypes = active.contains(FrameType.CONTENT_TYPES);
        metadataActive = active.contains(FrameType.METADATA);
        if (state == State.AWAITING_HELLO) {
            state = State.OPEN;
        }
        if (refusal != null) {
            throw refusal; // its goodbye carries the code now that the hellos made error-codes active (§19.1)
        }
        if (auth != null) {
            auth.helloReceived(active);
        }
        if (messages != null) {
            messages.helloReceived(); // the first messageCredit (§20.3)
        }
        events.add(new Event.PeerHello(h.extensions(), active));
    }

    private void goodbyeReceived(Frame.Goodbye g, Long code) {
        if (state != State.CLOSING) {
            out.write(new Frame.Goodbye(""), 0); // the answer (§9.1), without a code: nothing failed
        }
        close(g.reason(), null, code);
    }

    /**
     * The code a kept qualifier gives {@code f}, the message right after it; a connection error
     * if {@code f} is not the message it qualifies (§19.1).
     */
    private Long qualifiedCode(Frame f) throws ProtocolException {
        qualified = false;
        if (qualifiesGoodbye) {
            if (f instanceof Frame.Goodbye) {
                return qualifiedCode;
            }
            throw notQualified("goodbyeCode", FrameType.GOODBYE_CODE, null, f, null, "goodbye", "19.1");
        }
        if (f instanceof Frame.OnError e && e.subscriber() == qualifiedId) {
            return qualifiedCode;
        }
        throw notQualified("errorCode", FrameType.ERROR_CODE, qualifiedId, f,
                f instanceof Frame.OnError e ? e.subscriber() : null, "onError", "19.1");
    }

    /**
     * The connection error of a qualifier ({@code name}, type byte {@code code}, for {@code subscriber},
     * null for a goodbyeCode) followed by {@code f} where {@code target} must come, or by its target
     * for another id ({@code fSubscriber}), citing {@code section}; a second one of its type says so
     * (§17.1, §18.1, §19.1: the words are rstreams').
     */
    private static ProtocolException notQualified(String name, int code, Long subscriber, Frame f, Long fSubscriber,
            String target, String section) {
        if (f.type() == code) {
            return new ProtocolException(String.format("two %s (0x%02x) messages before one %s (PROTOCOL.md §%s)",
                    name, code, target, section));
        }
        return new ProtocolException(String.format("%s (0x%02x)%s followed by message type 0x%02x%s, not by %s %s (PROTOCOL.md §%s)",
                name, code, subscriber == null ? "" : " for subscriber " + Long.toUnsignedString(subscriber), f.type(),
                fSubscriber == null ? "" : " for subscriber " + Long.toUnsignedString(fSubscriber),
                subscriber == null ? "a" : "its", target, section));
    }

    /** The media type a held contentType gives {@code f}; a connection error if {@code f} is not its onSubscribe (§17.1). */
    private String heldTypeFor(Frame f) throws ProtocolException {
        ContentTypes.Announced held = heldType;
        heldType = null;
        if (f instanceof Frame.OnSubscribe o && o.subscriber() == held.subscriber()) {
            return held.mediaType();
        }
        throw notQualified("contentType", FrameType.CONTENT_TYPE, held.subscriber(), f,
                f instanceof Frame.OnSubscribe o ? o.subscriber() : null, "onSubscribe", "17.1");
    }

    /** The entries a held subscribeMetadata gives {@code f}; a connection error if {@code f} is not its subscribe (§18.1). */
    private SubscribeMetadata heldMetadataFor(Frame f) throws ProtocolException {
        SubscribeMetadata.Received held = heldMetadata;
        heldMetadata = null;
        if (f instanceof Frame.Subscribe s && s.subscriber() == held.subscriber()) {
            return held.metadata();
        }
        throw notQualified("subscribeMetadata", FrameType.SUBSCRIBE_METADATA, held.subscriber(), f,
                f instanceof Frame.Subscribe s ? s.subscriber() : null, "subscribe", "18.1");
    }

    /** An errorCode or goodbyeCode: kept for the message that must follow it (§19.1). */
    private void qualifierReceived(Frame.Extension x) throws ProtocolException {
        if (qualified) { // after our goodbye (§9.1): a second goodbyeCode before the answering goodbye
            throw qualifiesGoodbye ? notQualified("goodbyeCode", FrameType.GOODBYE_CODE, null, x, null, "goodbye", "19.1")
                    : notQualified("errorCode", FrameType.ERROR_CODE, qualifiedId, x, null, "onError", "19.1");
        }
        boolean goodbye = x.type() == FrameType.GOODBYE_CODE;
        long[] fields = qualifierFields(x.payload(), goodbye ? 1 : 2, goodbye ? "goodbyeCode" : "errorCode");
        qualified = true;
        qualifiesGoodbye = goodbye;
        qualifiedId = goodbye ? 0 : fields[0];
        qualifiedCode = fields[fields.length - 1];
    }

    /**
     * The varints of an errorCode or goodbyeCode payload, which they must fill exactly (§19.1).
     *
     * @throws ProtocolException citing §19.1 for a truncated or bad varint, or trailing bytes (rstreams' words)
     */
    static long[] qualifierFields(byte[] payload, int count, String what) throws ProtocolException {
        long[] fields = new long[count];
        int[] next = new int[1];
        for (int i = 0; i < count; i++) {
            try {
                fields[i] = Varint.read(payload, next[0], payload.length, next);
            } catch (Varint.Incomplete | ProtocolException e) {
                throw new ProtocolException("malformed " + what + (e instanceof Varint.Incomplete ? " (truncated)" : " (bad varint)")
                        + " payload (PROTOCOL.md §19.1)");
            }
        }
        if (next[0] != payload.length) {
            throw new ProtocolException("malformed " + what + " (" + (payload.length - next[0])
                    + " trailing bytes) payload (PROTOCOL.md §19.1)");
        }
        return fields;
    }

    /** An errorCode payload (§19.1): subscriber, code. */
    static byte[] errorCodePayload(long subscriber, long code) {
        byte[] payload = new byte[Varint.size(subscriber) + Varint.size(code)];
        Varint.write(code, payload, Varint.write(subscriber, payload, 0));
        return payload;
    }

    /** A goodbyeCode payload (§19.1): code. */
    static byte[] goodbyeCodePayload(long code) {
        byte[] payload = new byte[Varint.size(code)];
        Varint.write(code, payload, 0);
        return payload;
    }

    private void extensionReceived(Frame.Extension x) throws ProtocolException {
        long owner = FrameType.owner(x.type());
        if (!active.contains(owner)) {
            throw new ProtocolException(String.format(
                    "message type 0x%02x belongs to extension %s (id %d), which is not active on this connection (PROTOCOL.md §4.4)",
                    x.type(), FrameType.extensionName(owner), owner));
        }
        if (FrameType.reserved(x.type())) {
            throw new ProtocolException(String.format("message type 0x%02x is reserved by extension %s (id %d) (PROTOCOL.md §4.4)",
                    x.type(), FrameType.extensionName(owner), owner));
        }
        if (x.type() == FrameType.PING || x.type() == FrameType.PONG) {
            if (x.payload().length != PING_PAYLOAD) {
                throw new ProtocolException(String.format(
                        "keepalive %s payload must be 8 bytes, got %d (PROTOCOL.md §14.1)",
                        x.type() == FrameType.PING ? "ping" : "pong", x.payload().length));
            }
            if (x.type() == FrameType.PING) {
                out.write(new Frame.Extension(FrameType.PONG, x.payload()), 0);
            }
            return; // a pong: the peer is alive, which any input already showed
        }
        if (owner == FrameType.AUTH) {
            authReceived(x);
            return;
        }
        if (owner == FrameType.ERROR_CODES) {
            qualifierReceived(x);
            return;
        }
        if (owner == FrameType.CHANNELS) {
            if (x.type() == FrameType.INPUT_NEXT_PART && !active.contains(FrameType.INPUT_PARTS)) {
                throw new ProtocolException("message type 0xa6 is reserved by extension channels (id 8): extension input-parts "
                        + "(id 9) is not active on this connection (PROTOCOL.md §4.4)");
            }
            Channels.Input in = channels.received(x.type(), x.payload());
            if (in instanceof Channels.Input.TooLarge big) { // that input ends, the connection goes on (§21.6)
                out.write(new Frame.Extension(FrameType.INPUT_CANCEL, Channels.encode(big.subscriber())), 0);
            }
            if (in != null) {
                events.add(new Event.ChannelInput(in));
            }
            return;
        }
        if (owner == FrameType.MESSAGES) {
            Event e = messages.received(x.type(), x.payload(), auth);
            if (e != null) {
                events.add(e);
            }
            return;
        }
        if (owner == FrameType.CONTENT_TYPES) {
            heldType = ContentTypes.decode(x.payload()); // for the onSubscribe that must come next (§17.1)
            return;
        }
        if (owner == FrameType.METADATA) { // for the subscribe that must come next (§18.1)
            heldMetadata = SubscribeMetadata.decode(x.payload(), SubscribeMetadata.MAX_BYTES, SubscribeMetadata.MAX_ENTRIES);
            return;
        }
        events.add(new Event.ExtensionMessage(x.type(), x.payload()));
    }

    private void authReceived(Frame.Extension x) throws ProtocolException {
        int type = x.type();
        if (side == Side.CLIENT) {
            if (type != FrameType.AUTHENTICATED || x.payload().length != 0) {
                throw new ProtocolException(String.format(
                        "auth message 0x%02x is not one a client receives (PROTOCOL.md §15.5)", type));
            }
            events.add(new Event.ExtensionMessage(type, x.payload()));
            return;
        }
        if (type == FrameType.AUTHENTICATE && auth != null) {
            auth.authenticate(x.payload());
            out.write(new Frame.Extension(FrameType.AUTHENTICATED, new byte[0]), 0);
            releaseHeld();
        } else if (type == FrameType.SUBSCRIBE_CREDENTIALS && auth != null) {
            auth.subscribeCredentials(x.payload());
        } else {
            throw new ProtocolException(String.format(
                    "auth message 0x%02x is not one this server receives (PROTOCOL.md §15.5)", type));
        }
    }

    /** The authenticate is settled: the held subscribes go on in order, as if they arrived now (§15.3). */
    private void releaseHeld() {
        List<Map.Entry<Long, Theirs>> held = new ArrayList<>();
        for (Map.Entry<Long, Theirs> e : heldOrder) {
            if (theirs.get(e.getKey()) == e.getValue() && e.getValue().heldName != null) {
                held.add(e);
            }
        }
        heldOrder.clear();
        if (messages != null) {
            events.addAll(messages.release(auth)); // held messages, checked in order (§20.4)
        }
        for (Map.Entry<Long, Theirs> e : held) {
            String name = e.getValue().heldName;
            e.getValue().heldName = null;
            if (e.getValue().cancelledWhileHeld) {
                theirs.remove(e.getKey());
                out.write(new Frame.OnComplete(e.getKey()), 0); // the cancel's acknowledgement (§5.4)
            } else if (refusedByAuth(e.getKey(), name, e.getValue().heldMetadata)) {
                theirs.remove(e.getKey());
            } else {
                if (e.getValue().channel) {
                    channelOpened(e.getKey());
                }
                events.add(new Event.Subscribed(e.getKey(), name, e.getValue().credit, e.getValue().heldMetadata));
            }
        }
    }


    // -- the peer as subscriber (its ids) --

    private void subscribeReceived(Frame.Subscribe s, SubscribeMetadata metadata) throws ProtocolException {
        long id = s.subscriber();
        boolean channel = channels != null && channels.subscribeReceived(id); // the mark is used up whatever follows (§21.3)
        if (theirs.containsKey(id)) {
            throw new ProtocolException("subscribe reuses subscriber id " + Long.toUnsignedString(id)
                    + " before its subscription ended (PROTOCOL.md §5.3)");
        }
        if (s.initialDemand() < 0) {
            refuse(id, "rule 3.9: initialDemand " + Long.toUnsignedString(s.initialDemand())
                    + " is above 2**63 - 1 (PROTOCOL.md §6.2)", ErrorCode.INVALID_DEMAND);
        } else if (s.publisher().getBytes(StandardCharsets.UTF_8).length > limits.maxNameLength()) {
            refuse(id, "refused: publisher name longer than max_name_length=" + limits.maxNameLength() + " bytes (PROTOCOL.md §11)",
                    ErrorCode.LIMIT_EXCEEDED);
        } else if (theirs.size() >= limits.maxSubscriptions()) {
            refuse(id, "refused: at most max_subscriptions=" + limits.maxSubscriptions() + " subscriptions per connection (PROTOCOL.md §11)",
                    ErrorCode.LIMIT_EXCEEDED);
        } else if (auth != null && auth.holding()) {
            Theirs t = new Theirs(); // held until the authenticate is settled (§15.3)
            t.credit = s.initialDemand();
            t.heldName = s.publisher();
            t.heldMetadata = metadata;
            t.channel = channel;
            theirs.put(id, t);
            heldOrder.add(Map.entry(id, t));
        } else if (auth == null || !refusedByAuth(id, s.publisher(), metadata)) {
            Theirs t = new Theirs();
            t.credit = s.initialDemand();
            theirs.put(id, t);
            if (channel) {
                channelOpened(id);
            }
            events.add(new Event.Subscribed(id, s.publisher(), s.initialDemand(), metadata));
        }
    }

    /** The peer's subscribe {@code id} opens a channel (§21.3): its input is OPEN, and {@link Event.ChannelOpened} comes right before its Subscribed. */
    private void channelOpened(long id) {
        channels.opened(id);
        events.add(new Event.ChannelOpened(id));
    }

    /** Subscription {@code id} is over: a channel's input ends with it, without a message (§21.5). */
    private void outputEnded(long id, boolean peers) {
        if (channels != null) {
            channels.outputEnded(id, peers);
        }
    }

    /** Whether the gate refuses the subscribe {@code id} to {@code name} (§15.4); if so, its refusal is sent. */
    private boolean refusedByAuth(long id, String name, SubscribeMetadata metadata) {
        Authorizer.Refusal r = auth.admit(id, name, metadata);
        if (r != null) {
            writeOnError(id, r.text(), r.code());
        }
        return r != null;
    }

    private void refuse(long id, String text, ErrorCode code) {
        writeOnError(id, text, code.value());
    }

    /** onError, right after its errorCode when error-codes is active and there is a code (§19.1). */
    private void writeOnError(long id, String error, Long code) {
        if (codes && code != null) {
            out.write(new Frame.Extension(FrameType.ERROR_CODE, errorCodePayload(id, code)), 0);
        }
        out.write(new Frame.OnError(id, error), 0);
    }

    private void requestReceived(long id, long n) {
        Theirs t = theirs.get(id);
        if (t == null) {
            return; // crossed our terminal signal (§5.4)
        }
        if (n <= 0) {
            theirs.remove(id);
            outputEnded(id, true);
            String reason = "rule 3.9: request(" + (n == 0 ? "0" : Long.toUnsignedString(n) + " (a negative 64-bit number)")
                    + ") is illegal (PROTOCOL.md §6.2)";
            writeOnError(id, reason, ErrorCode.INVALID_DEMAND.value());
            events.add(new Event.Cancelled(id, reason));
            return;
        }
        t.credit = addDemand(t.credit, n);
        if (t.heldName == null) {
            events.add(new Event.Demand(id, n));
        }
    }

    private void cancelReceived(long id) {
        Theirs held = theirs.get(id);
        if (held != null && held.heldName != null) {
            held.cancelledWhileHeld = true; // no answer before authenticated, none if it fails (§15.3)
            return;
        }
        if (theirs.remove(id) == null) {
            return; // crossed our terminal signal, or never opened (§5.4)
        }
        outputEnded(id, true);
        out.write(new Frame.OnComplete(id), 0); // the acknowledgement (§5.4)
        events.add(new Event.Cancelled(id, null));
    }

    // -- the peer as publisher (our ids) --

    /** Our subscription {@code id}, if {@code signal} may come now (§5.2); else the violation, in rstreams' words. */
    private Ours open(long id, Signal signal) throws ProtocolException {
        Ours o = ours.get(id);
        if (o == null) {
            throw new ProtocolException(SIGNAL_NAMES[signal.ordinal()] + " for unknown subscriber id " + Long.toUnsignedString(id)
                    + " (PROTOCOL.md §5.2)");
        }
        if (o.state.after(signal) == null) {
            throw new ProtocolException(SIGNAL_NAMES[signal.ordinal()] + " for subscriber " + Long.toUnsignedString(id)
                    + " in state " + o.state + " (PROTOCOL.md §5.2)");
        }
        return o;
    }

    /** The signals as rstreams names them (parts and onNextPacked are onNext), by ordinal. */
    private static final String[] SIGNAL_NAMES = {"subscribe", "request", "cancel", "onSubscribe", "onNext", "onComplete", "onError"};

    private void onSubscribeReceived(long id, long elementSize, String contentType) throws ProtocolException {
        Ours o = open(id, Signal.ON_SUBSCRIBE);
        if (o.state == StreamState.CANCELLED) {
            return;
        }
        o.state = StreamState.ACTIVE;
        o.elementSize = elementSize;
        events.add(new Event.OnSubscribed(id, elementSize, contentType));
    }

    private void take(Ours o, long id, long count) throws ProtocolException {
        if (o.outstanding == UNBOUNDED) {
            return;
        }
        if (Long.compareUnsigned(count, o.outstanding) > 0) {
            throw new ProtocolException(Long.toUnsignedString(count) + " element(s) for subscriber " + Long.toUnsignedString(id)
                    + " exceed the outstanding demand of " + o.outstanding + " (PROTOCOL.md §6.3)");
        }
        o.outstanding -= count;
    }

    private void onNextReceived(long id, byte[] element) throws ProtocolException {
        Ours o = open(id, Signal.ON_NEXT);
        if (o.state == StreamState.CANCELLED) {
            return;
        }
        take(o, id, 1);
        events.add(new Event.Element(id, element));
    }

    private void packedReceived(Frame.OnNextPacked p) throws ProtocolException {
        Ours o = open(p.subscriber(), Signal.ON_NEXT);
        if (o.state == StreamState.CANCELLED) {
            return;
        }
        take(o, p.subscriber(), p.count());
        events.add(new Event.Packed(p.subscriber(), p.count(), o.elementSize, p.elements()));
    }

    private void partReceived(Frame.OnNextPart p) throws ProtocolException {
        long id = p.subscriber();
        Ours o = open(id, Signal.ON_NEXT);
        if (o.state == StreamState.CANCELLED) {
            return;
        }
        PartKey key = new PartKey(id, p.elementId());
        Parts joined = partials.get(key);
        if (joined == null) {
            take(o, id, 1); // the first part consumes the demand (§8)
            if (p.last()) {
                deliverJoined(o, id, p.data());
                return;
            }
            if (partials.size() + (channels == null ? 0 : channels.joining()) >= limits.maxPartsInFlight()) { // with split input (§21.6)
                throw ProtocolException.limit("more than max_parts_in_flight=" + limits.maxPartsInFlight()
                        + " split elements at once (PROTOCOL.md §11)");
            }
            joined = new Parts();
            partials.put(key, joined);
        }
        if ((long) joined.size() + p.data().length > limits.maxElementSize()) { // checked before the bytes in flight, as rstreams
            dropPartials(id);
            o.state = StreamState.CANCELLED;
            out.write(new Frame.Cancel(id), 0);
            events.add(new Event.Failed(id, "a split element of subscriber " + Long.toUnsignedString(id)
                    + " exceeds max_element_size=" + limits.maxElementSize() + " (PROTOCOL.md §8)", true));
            return;
        }
        if (partialBytes + p.data().length + (channels == null ? 0 : channels.joiningBytes()) > limits.maxReassemblyBytes()) {
            throw ProtocolException.limit("split elements in flight exceed max_reassembly_bytes=" + limits.maxReassemblyBytes()
                    + " (PROTOCOL.md §11)");
        }
        partialBytes += p.data().length;
        joined.add(p.data());
        if (p.last()) {
            partials.remove(key);
            partialBytes -= joined.size();
            deliverJoined(o, id, joined.join());
        }
    }

    private void deliverJoined(Ours o, long id, byte[] element) throws ProtocolException {
        if (o.elementSize != 0 && element.length != o.elementSize) {
            throw new ProtocolException("joined element of " + element.length + " bytes for subscriber "
                    + Long.toUnsignedString(id) + ", whose elementSize is " + o.elementSize + " (PROTOCOL.md §7)");
        }
        events.add(new Event.Element(id, element));
    }

    /** Split output elements partly received, which count with a channel's split input against max_parts_in_flight (§21.6). */
    int outputJoining() {
        return partials.size();
    }

    /** Their bytes, which count with a channel's split input against max_reassembly_bytes (§21.6). */
    long outputJoiningBytes() {
        return partialBytes;
    }

    private void dropPartials(long id) {
        partials.entrySet().removeIf(e -> {
            if (e.getKey().id() == id) {
                partialBytes -= e.getValue().size();
                return true;
            }
            return false;
        });
    }

    private int unfinished(long id) {
        int n = 0;
        for (PartKey k : partials.keySet()) {
            if (k.id() == id) {
                n++;
            }
        }
        return n;
    }

    private boolean hasPartial(long id) {
        for (PartKey k : partials.keySet()) {
            if (k.id() == id) {
                return true;
            }
        }
        return false;
    }

    private void terminalReceived(long id, String error, Long code) throws ProtocolException {
        Ours o = open(id, error == null ? Signal.ON_COMPLETE : Signal.ON_ERROR);
        boolean quiet = o.state == StreamState.CANCELLED;
        if (error == null && !quiet && !partials.isEmpty() && hasPartial(id)) {
            throw new ProtocolException("onComplete for subscriber " + Long.toUnsignedString(id) + " with "
                    + unfinished(id) + " unfinished split element(s) (PROTOCOL.md §8)");
        }
        if (!partials.isEmpty()) {
            dropPartials(id);
        }
        ours.remove(id); // the id is free again (§5.3)
        outputEnded(id, false);
        if (!quiet) {
            events.add(error == null ? new Event.Completed(id) : new Event.Failed(id, error, false, code));
        }
    }

    private void fail(ProtocolException e) {
        if (state == State.CLOSED) {
            return;
        }
        Long code = codes && state == State.OPEN && e.code() != null ? e.code().value() : null;
        if (state != State.CLOSING) { // after our goodbye nothing more goes out (§9.1): the violation just ends it
            if (code != null) {
                out.write(new Frame.Extension(FrameType.GOODBYE_CODE, goodbyeCodePayload(code)), 0);
            }
            out.write(new Frame.Goodbye(e.getMessage()), 0);
        }
        close(e.getMessage(), e, code);
    }

    private void close(String reason, ProtocolException error, Long code) {
        state = State.CLOSED;
        qualified = false;
        heldType = null;
        heldMetadata = null;
        ours.clear();
        theirs.clear();
        splitting.clear();
        partials.clear();
        partialBytes = 0;
        if (messages != null) {
            messages.closed();
        }
        if (channels != null) {
            channels.clear();
        }
        events.add(new Event.Closed(reason, error, code));
    }

    // ---- sending --------------------------------------------------------------------------

    private void checkSending() {
        if (state == State.CLOSING || state == State.CLOSED) {
            throw new IllegalStateException("can't send on a connection that is " + state.name().toLowerCase()
                    + " (PROTOCOL.md §9.1)");
        }
    }

    /**
     * Subscribes to the peer's publisher {@code name}: allocates the smallest free id (§5.3).
     *
     * @param initialDemand 0 .. {@link #UNBOUNDED}
     * @return our subscriber id
     */
    public long subscribe(String name, long initialDemand) {
        return subscribe(name, initialDemand, null);
    }

    /**
     * {@link #subscribe(String, long)} with credentials of its own (PROTOCOL.md §15.4): a
     * subscribeCredentials for the id goes right before the subscribe, and the server checks
     * them instead of the connection's. A client's, once the peer's hello made extension auth
     * active (§4.4, §15.2).
     *
     * @param credentials this subscribe's own, or null for the connection's
     * @throws IllegalStateException if credentials are given and extension auth is not active
     */
    public long subscribe(String name, long initialDemand, Credentials credentials) {
        return subscribe(name, initialDemand, credentials, null);
    }

    /**
     * {@link #subscribe(String, long, Credentials)} with {@code metadata} (extension metadata,
     * §18.1): a subscribeMetadata for the id goes right before the subscribe (after the
     * subscribeCredentials, if any) when the extension is active; without it, the subscribe goes
     * alone (whether that may be is the caller's choice, §18.1). Never before the peer's hello:
     * the caller holds such a subscribe until then.
     *
     * @param metadata the subscribe's entries, or null for none
     */
    public long subscribe(String name, long initialDemand, Credentials credentials, SubscribeMetadata metadata) {
        checkSending();
        if (initialDemand < 0) {
            throw new IllegalArgumentException("rule 3.9: initialDemand must be >= 0, got " + initialDemand);
        }
        checkCredentials(name, credentials);
        long id = nextId;
        while (ours.containsKey(id)) {
            id++;
        }
        nextId = 1;
        Ours o = new Ours();
        o.outstanding = initialDemand;
        ours.put(id, o);
        if (credentials != null) {
            byte[] c = credentials.encode();
            byte[] payload = new byte[Varint.size(id) + c.length];
            System.arraycopy(c, 0, payload, Varint.write(id, payload, 0), c.length);
            out.write(new Frame.Extension(FrameType.SUBSCRIBE_CREDENTIALS, payload), 0);
        }
        if (metadata != null && metadataActive) { // adjacent to its subscribe (§18.1)
            out.write(new Frame.Extension(FrameType.SUBSCRIBE_METADATA, metadata.encode(id)), 0);
        }
        out.write(new Frame.Subscribe(name, id, initialDemand), 0);
        return id;
    }

    private void checkCredentials(String name, Credentials credentials) {
        if (credentials != null && (side != Side.CLIENT || !active.contains(FrameType.AUTH))) {
            throw new IllegalStateException("can't subscribe to '" + name + "' with credentials: extension auth (id 2) is not active "
                    + "on this client connection (PROTOCOL.md §15.2, §15.4)");
        }
    }

    /** Adds {@code n} (1 .. {@link #UNBOUNDED}) to the demand of our subscription {@code id}; a no-op once it ended. */
    public void request(long id, long n) {
        if (n <= 0) {
            throw new IllegalArgumentException("rule 3.9: request(n) needs an int n > 0 (non-positive subscription request), got " + n);
        }
        Ours o = ours.get(id);
        if (o == null || o.state == StreamState.CANCELLED || state == State.CLOSING || state == State.CLOSED) {
            return;
        }
        o.outstanding = addDemand(o.outstanding, n);
        out.write(new Frame.Request(id, n), 0);
    }

    /** Cancels our subscription {@code id}; the id stays in use until the acknowledgement (§5.3, §5.4). */
    public void cancel(long id) {
        Ours o = ours.get(id);
        if (o == null || o.state == StreamState.CANCELLED || state == State.CLOSING || state == State.CLOSED) {
            return;
        }
        o.state = StreamState.CANCELLED;
        if (!partials.isEmpty()) {
            dropPartials(id);
        }
        outputEnded(id, false); // the opener's input ends when it sends its cancel (§21.5)
        out.write(new Frame.Cancel(id), 0);
    }

    /** The demand the peer granted on its subscription {@code id} and we have not used (0 if none is open). */
    public long credit(long id) {
        Theirs t = theirs.get(id);
        return t == null ? 0 : t.credit;
    }

    /** Whether the peer's subscription {@code id} is open (subscribed and not ended). */
    public boolean isOpen(long id) {
        return theirs.containsKey(id);
    }

    /**
     * Answers the peer's subscribe {@code id} with onSubscribe.
     *
     * @return false if that subscription is already over (cancelled by the peer)
     */
    public boolean onSubscribe(long id, long elementSize) {
        return onSubscribe(id, elementSize, null);
    }

    /**
     * {@link #onSubscribe(long, long)}, stating {@code contentType} in a contentType right before
     * it when extension content-types is active (§17.1); without it, or with null, onSubscribe alone.
     *
     * @param contentType the elements' media type (checked by {@link ContentTypes#check}), or null
     */
    public boolean onSubscribe(long id, long elementSize, String contentType) {
        Theirs t = theirs.get(id);
        if (t == null || state == State.CLOSING || state == State.CLOSED) {
            return false;
        }
        if (t.state != StreamState.SUBSCRIBED) {
            throw new IllegalStateException("onSubscribe for subscriber " + id + " was already sent");
        }
        if (elementSize < 0 || elementSize > limits.maxElementSize()) {
            throw new IllegalArgumentException("elementSize must be 0 .. " + limits.maxElementSize() + ", got " + elementSize);
        }
        t.state = StreamState.ACTIVE;
        t.elementSize = elementSize;
        if (contentType != null && contentTypes) { // adjacent to its onSubscribe (§17.1)
            out.write(new Frame.Extension(FrameType.CONTENT_TYPE, ContentTypes.encode(id, contentType)), 0);
        }
        out.write(new Frame.OnSubscribe(id, elementSize), 0);
        return true;
    }

    private Theirs sendable(long id, long count) {
        Theirs t = theirs.get(id);
        if (t == null || state == State.CLOSING || state == State.CLOSED) {
            return null;
        }
        if (t.state != StreamState.ACTIVE) {
            throw new IllegalStateException("can't send onNext on subscriber " + id + " before onSubscribe");
        }
        if (t.credit != UNBOUNDED) {
            if (count > t.credit) {
                throw new IllegalStateException("can't send " + count + " element(s) on subscriber " + id
                        + ": outstanding demand is " + t.credit + " (PROTOCOL.md §6.3)");
            }
            t.credit -= count;
        }
        return t;
    }

    /**
     * Sends one element on the peer's subscription {@code id}, split into parts above the split
     * threshold (§8); consumes one demand.
     *
     * @return false if that subscription is already over
     * @throws IllegalStateException without outstanding demand
     */
    public boolean onNext(long id, byte[] element) {
        Theirs t = sendable(id, 1);
        if (t == null) {
            return false;
        }
        if (t.elementSize != 0 && element.length != t.elementSize) {
            throw new IllegalArgumentException("subscriber " + id + " takes elements of " + t.elementSize
                    + " bytes (its elementSize), got " + element.length);
        }
        if (t.queued.isEmpty() && element.length <= limits.splitThreshold()) {
            out.onNext(id, element, 0, element.length, t.elementSize);
            return true;
        }
        enqueue(id, t, element, element.length);
        return true;
    }

    private void enqueue(long id, Theirs t, Object item, long bytes) {
        if (t.queued.isEmpty()) {
            splitting.add(id);
        }
        t.queued.add(item);
        t.queuedBytes += bytes;
    }

    /** Bytes of elements of the peer's subscription {@code id} waiting behind a split element. */
    public long queuedBytes(long id) {
        Theirs t = theirs.get(id);
        return t == null ? 0 : t.queuedBytes;
    }

    /** Whether split elements (or what waits behind them) are queued: call {@link #sendParts}. */
    public boolean hasQueuedParts() {
        return !splitting.isEmpty();
    }

    /**
     * Writes queued parts, one part per subscription in turn, so one large element does not
     * stall the other streams (§8), until about {@code budget} bytes were written or nothing is
     * queued. Elements and terminal signals queued behind a split element follow it in order.
     *
     * @return the peer ids whose queues this emptied (their publishers may produce again)
     */
    public List<Long> sendParts(long budget) {
        List<Long> emptied = new ArrayList<>();
        int chunk = limits.splitThreshold();
        while (budget > 0 && !splitting.isEmpty() && state != State.CLOSING && state != State.CLOSED) {
            long id = splitting.poll();
            Theirs t = theirs.get(id);
            if (t == null || t.queued.isEmpty()) {
                continue;
            }
            Object head = t.queued.peek();
            if (head instanceof Terminal end) {
                t.queued.clear();
                theirs.remove(id);
                outputEnded(id, true);
                if (end.error() == null) {
                    out.write(new Frame.OnComplete(id), 0);
                } else {
                    writeOnError(id, end.error(), end.code());
                }
                emptied.add(id);
                continue;
            }
            byte[] element = (byte[]) head;
            if (t.offset == 0 && element.length <= chunk) {
                out.onNext(id, element, 0, element.length, t.elementSize);
                t.queued.poll();
                t.queuedBytes -= element.length;
                budget -= element.length;
            } else {
                int len = Math.min(chunk, element.length - t.offset);
                boolean last = t.offset + len == element.length;
                out.part(last, id, 0, element, t.offset, len);
                budget -= len;
                t.offset += len;
                if (last) {
                    t.offset = 0;
                    t.queued.poll();
                    t.queuedBytes -= element.length;
                }
            }
            if (t.queued.isEmpty()) {
                emptied.add(id);
            } else {
                splitting.add(id);
            }
        }
        return emptied;
    }

    /**
     * Sends {@code count} fixed-size elements, back to back in {@code data}, as one onNextPacked (§7).
     *
     * @return false if that subscription is already over
     */
    public boolean onNextPacked(long id, byte[] data, int count) {
        Theirs t = theirs.get(id);
        if (t != null && (t.elementSize == 0 || (long) count * t.elementSize != data.length || count < 1)) {
            throw new IllegalArgumentException("onNextPacked needs elementSize > 0 and count * elementSize bytes");
        }
        if (sendable(id, count) == null) {
            return false;
        }
        out.write(new Frame.OnNextPacked(id, count, data), 0);
        return true;
    }

    /** Completes the peer's subscription {@code id} (after any queued split element); false if it is already over. */
    public boolean onComplete(long id) {
        return terminal(id, null, null);
    }

    /** Fails the peer's subscription {@code id} with {@code error}, without an error code; false if it is already over. */
    public boolean onError(long id, String error) {
        return terminal(id, error, null);
    }

    /**
     * Fails the peer's subscription {@code id} with {@code error} (after any queued split element);
     * with extension error-codes active, an errorCode carrying {@code code} goes right before the
     * onError (§19.1); without it, just the onError.
     *
     * @param code the error code (§19.2), or null for none
     * @return false if that subscription is already over
     */
    public boolean onError(long id, String error, Long code) {
        return terminal(id, error, code);
    }

    private boolean terminal(long id, String error, Long code) {
        Theirs t = theirs.get(id);
        if (t == null || state == State.CLOSING || state == State.CLOSED) {
            return false;
        }
        if (!t.queued.isEmpty()) {
            if (!(t.queued.peekLast() instanceof Terminal)) {
                enqueue(id, t, new Terminal(error, code), 0);
            }
            return true;
        }
        theirs.remove(id);
        outputEnded(id, true);
        if (error == null) {
            out.write(new Frame.OnComplete(id), 0);
        } else {
            writeOnError(id, error, code);
        }
        return true;
    }

    /**
     * Opens a channel on the peer's channel publisher {@code name} (§21.3): the mark, then the
     * subscribe, for the smallest free id; the input is OPEN with no demand until the peer's
     * inputRequest ({@link Event.ChannelInput} of {@link Channels.Input.Demand}).
     *
     * @return our subscriber id, the channel's
     * @throws IllegalStateException if extension channels is not active (§21.1)
     */
    public long openChannel(String name, long initialDemand) {
        return openChannel(name, initialDemand, null, null);
    }

    /**
     * {@link #openChannel(String, long)} with the subscribe's own credentials and metadata, as
     * {@link #subscribe(String, long, Credentials, SubscribeMetadata)} sends them: the mark, then
     * the subscribeCredentials and the subscribeMetadata, then the subscribe (§21.3 lets them
     * come between the mark and its subscribe).
     *
     * @param credentials the subscribe's own (§15.4), or null for the connection's
     * @param metadata the subscribe's entries (§18.1), or null for none
     */
    public long openChannel(String name, long initialDemand, Credentials credentials, SubscribeMetadata metadata) {
        checkSending();
        if (channels == null || !active.contains(FrameType.CHANNELS)) {
            throw new IllegalStateException("can't open a channel: the peer does not offer extension channels (id 8) (PROTOCOL.md §21.1)");
        }
        long id = nextId;
        while (ours.containsKey(id)) {
            id++;
        }
        checkCredentials(name, credentials); // before the mark goes
        out.write(new Frame.Extension(FrameType.CHANNEL, channels.opening(id)), 0);
        long got = subscribe(name, initialDemand, credentials, metadata);
        assert got == id : "subscribe allocates the id the mark names";
        return got;
    }

    /**
     * The channel input of the peer's channel {@code id} (this end publishes): grants {@code n}
     * more elements (inputRequest), cancels it (inputCancel), as §21.4 and §21.5 say; no-ops once
     * that input or its subscription ended.
     */
    public void requestInput(long id, long n) {
        byte[] payload = channels == null || state != State.OPEN ? null : channels.request(id, n);
        if (payload != null) {
            out.write(new Frame.Extension(FrameType.INPUT_REQUEST, payload), 0);
        }
    }

    /** See {@link #requestInput}: inputCancel. */
    public void cancelInput(long id) {
        byte[] payload = channels == null || state != State.OPEN ? null : channels.cancelInput(id);
        if (payload != null) {
            out.write(new Frame.Extension(FrameType.INPUT_CANCEL, payload), 0);
        }
    }

    /**
     * One element of the input of our channel {@code id}, within the input demand the peer granted (§21.4):
     * one inputNext, or, above {@link #inputPartSize} with extension input-parts active, inputNextPart
     * messages and the inputNext that ends them (§21.6).
     *
     * @throws IllegalStateException without input demand, or when that input ended
     */
    public void sendInput(long id, byte[] element) {
        checkSending();
        int part = inputPartSize();
        if (element.length <= part || !active.contains(FrameType.INPUT_PARTS)) {
            out.write(new Frame.Extension(FrameType.INPUT_NEXT, channels.sendInput(id, element)), 0);
            return;
        }
        java.util.List<byte[]> payloads = channels.sendInputParts(id, element, part);
        for (int i = 0; i < payloads.size(); i++) {
            out.write(new Frame.Extension(i == payloads.size() - 1 ? FrameType.INPUT_NEXT : FrameType.INPUT_NEXT_PART, payloads.get(i)), 0);
        }
    }

    /**
     * Input elements larger than this are sent split when extension input-parts is active (§21.6):
     * {@code min(split_threshold, max_string_length - 10)}, 65,526 bytes by default.
     */
    public int inputPartSize() {
        return Math.min(limits.splitThreshold(), limits.maxStringLength() - 10);
    }

    /** Ends the input of our channel {@code id}: inputComplete ({@code error} null) or inputError; a no-op once it ended. */
    public void endInput(long id, String error) {
        byte[] payload = channels == null || state != State.OPEN ? null : channels.endInput(id, error);
        if (payload != null) {
            out.write(new Frame.Extension(error == null ? FrameType.INPUT_COMPLETE : FrameType.INPUT_ERROR, payload), 0);
        }
    }

    /** Sends an extension message; its extension must be active (§4.4). */
    public void sendExtension(int type, byte[] payload) {
        checkSending();
        long owner = FrameType.owner(type);
        if (!active.contains(owner)) {
            throw new IllegalStateException(String.format(
                    "can't send message type 0x%02x: its extension is not active (PROTOCOL.md §4.4)", type));
        }
        out.write(new Frame.Extension(type, payload), 0);
    }

    /**
     * Starts an orderly close (§9.1): queues goodbye, ends every subscription in both directions
     * and waits in {@link State#CLOSING} for the answer. A no-op once closing or closed. The
     * goodbye carries no error code.
     */
    public void goodbye(String reason) {
        goodbye(reason, null);
    }

    /**
     * {@link #goodbye(String)}, with {@code code} (e.g. {@link ErrorCode#NORMAL}) in a goodbyeCode
     * right before the goodbye when extension error-codes is active (§19.1).
     *
     * @param code the goodbye's code, or null for none
     */
    public void goodbye(String reason, ErrorCode code) {
        if (state == State.CLOSING || state == State.CLOSED) {
            return;
        }
        if (codes && code != null && state == State.OPEN) {
            out.write(new Frame.Extension(FrameType.GOODBYE_CODE, goodbyeCodePayload(code.value())), 0);
        }
        out.write(new Frame.Goodbye(reason), 0);
        state = State.CLOSING;
        qualified = false; // a qualifier read before our goodbye qualified a message now discarded (§9.1)
        heldType = null;
        heldMetadata = null;
        ours.clear();
        theirs.clear();
        splitting.clear();
        partials.clear();
        partialBytes = 0;
        if (channels != null) {
            channels.clear();
        }
    }

    /**
     * Whether a client must authenticate (§15.2), on a server connection that checks credentials:
     * true by default (a clientHello without auth is answered with goodbye {@code authentication
     * required: ...}); false serves such a client unauthenticated, its subscribes and messages
     * authorized with null credentials (§15.4, §20.4), as rstreams' {@code
     * serve(auth_required=False)}. A client whose hello lists auth must still authenticate.
     *
     * @throws IllegalStateException if this connection checks no credentials, or the client's hello has come
     */
    public void authRequired(boolean required) {
        if (auth == null || !auth.checksCredentials()) {
            throw new IllegalStateException("only a server connection that checks credentials (an authenticator) requires them or not "
                    + "(PROTOCOL.md §15.2)");
        }
        if (state != State.AWAITING_HELLO) {
            throw new IllegalStateException("whether authentication is required is settled before the clientHello (PROTOCOL.md §15.2)");
        }
        auth.required(required);
    }

    /** Whether this end (a server checking credentials) still waits for the client's authenticate (§15.3). */
    public boolean authenticating() {
        return auth != null && auth.holding();
    }

    /**
     * Ends the connection for a reason of this end's own (an idle or authentication timeout):
     * queues goodbye(reason) and closes without waiting for the answer, like after a protocol
     * error (§10, §14.2); emits {@link Event.Closed} with the reason as its error. The goodbye
     * carries no error code.
     */
    public void abort(String reason) {
        abort(reason, null);
    }

    /**
     * {@link #abort(String)}, with {@code code} (§10's for that reason, e.g. {@link ErrorCode#TIMEOUT})
     * in a goodbyeCode right before the goodbye when extension error-codes is active (§19.1).
     *
     * @param code the goodbye's code, or null for none
     */
    public void abort(String reason, ErrorCode code) {
        fail(new ProtocolException(reason, code));
    }

    /**
     * Refuses the peer at its hello (a server over its connection limit): once the hello is read,
     * {@link #abort(String, ErrorCode)} with {@code reason} and {@code code}, so the goodbye carries
     * the code when the hello makes error-codes active (§19.1), and nothing the peer sent after its
     * hello is handled. No {@link Event.PeerHello} is emitted. At once if the hello is in already.
     */
    public void refuseAtHello(String reason, ErrorCode code) {
        if (helloReceived) {
            abort(reason, code);
        } else {
            refusal = new ProtocolException(reason, code);
        }
    }

    /** Adds demand, saturating at {@link #UNBOUNDED} (§6.1). */
    public static long addDemand(long a, long b) {
        long sum = a + b;
        return sum < 0 ? UNBOUNDED : sum;
    }
}
