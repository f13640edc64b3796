package io.rstreams.wire;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/**
 * Extension channels (PROTOCOL.md §21) without I/O: the payloads of its messages (0xA0-0xA5, and
 * input-parts' 0xA6, §21.6), the mark that makes a subscribe a channel (§21.3), and the input of
 * each channel at both ends: the demand (§21.4), the split element being joined (§21.6), the
 * end (§21.5).
 *
 * <p>Theory of operation. Every channel is keyed by its opener's subscriber id (§5.1). At the
 * publisher end ({@code theirs}: the peer opened it), {@link #markReceived} holds a channel mark
 * for the subscribe that must follow it, {@link #subscribeReceived} says whether that subscribe
 * opens a channel, {@link #opened} starts its input once the subscribe is served, and
 * {@link #received} takes the opener's input messages: an element beyond the input demand
 * granted ({@link #request}) is a connection error, as inputComplete amid a split element is.
 * At the opener end ({@code ours}), {@link #opening} starts the input of a channel this end
 * opens, {@link #received} takes the publisher's inputRequest and inputCancel, and
 * {@link #sendInput} uses one input demand per element. Either end: {@link #outputEnded} when
 * the subscription is over (terminal signal, acknowledged cancel, goodbye) returns the id to
 * IDLE; input messages for an id in IDLE or ENDED are dropped quietly (§21.5's table). Each
 * call that sends returns the payload; the caller writes it with its type.
 *
 * <p>{@link Connection} routes the extension's messages here when it offers id 8 (the net layer
 * always does), and emits {@link Event.ChannelOpened} and {@link Event.ChannelInput}.
 */
public final class Channels {
    /** A payload read: the subscriber and, by type, the demand (inputRequest), the data (inputNext, inputNextPart) or the text (inputError). */
    public record Decoded(int type, long subscriber, long demand, byte[] data, String text) {}

    /** What an input message did at this end: null when dropped or still joining an element. */
    public sealed interface Input {
        /** The publisher granted {@code n} more input elements (opener end). */
        record Demand(long subscriber, long n) implements Input {}

        /** The publisher cancelled the input (opener end): cancel the input Publisher. */
        record Cancelled(long subscriber) implements Input {}

        /** One input element, parts joined (publisher end). */
        record Element(long subscriber, byte[] data) implements Input {}

        /** The input completed ({@code error} null) or failed with that text (publisher end). */
        record Ended(long subscriber, String error) implements Input {}

        /**
         * A split element grew past {@code max_element_size} (publisher end, §21.6): that input is
         * ENDED, the caller sends inputCancel and fails the input's Subscriber with {@code reason};
         * the output goes on.
         */
        record TooLarge(long subscriber, String reason) implements Input {}
    }

    private enum State { OPEN, ENDED }

    private static final class InputState {
        State state = State.OPEN;
        long demand; // publisher end: granted and unused; opener end: the peer's grant unused
        Parts parts; // publisher end: the split element being joined (§21.6)
    }

    private static final class Parts {
        final java.util.List<byte[]> list = new java.util.ArrayList<>();
        long size;
    }

    private final Limits limits;
    private final Connection connection; // whose split output elements count with the input's (§21.6), or null
    private int joining; // split input elements partly received, over all channels
    private long joiningBytes; // their bytes
    private final Map<Long, InputState> theirs = new HashMap<>(); // channels the peer opened on us
    private final Map<Long, InputState> ours = new HashMap<>(); // channels we opened on the peer
    private boolean marked; // a channel mark waits for its subscribe (§21.3)
    private long mark; // its subscriber id

    /** @param limits this end's limits: an input element is at most {@code maxElementSize} joined (§21.6) */
    public Channels(Limits limits) {
        this(limits, null);
    }

    /**
     * {@code connection}'s channels: a partly received split input element counts against
     * {@code max_parts_in_flight} and {@code max_reassembly_bytes} together with the split output
     * elements the connection is joining (§21.6, §11).
     */
    Channels(Limits limits, Connection connection) {
        this.limits = limits;
        this.connection = connection;
    }

    /** Split input elements partly received (counted by the connection with its split output elements, §21.6). */
    int joining() {
        return joining;
    }

    /** The bytes of the split input elements partly received. */
    long joiningBytes() {
        return joiningBytes;
    }

    /** Forgets the split element {@code in} was joining (its input ended, or the element is whole). */
    private void dropParts(InputState in) {
        if (in.parts != null) {
            joining--;
            joiningBytes -= in.parts.size;
            in.parts = null;
        }
    }

    // ---- payloads ---------------------------------------------------------------------------

    /** The payload of a channel, inputCancel or inputComplete: the subscriber alone. */
    public static byte[] encode(long subscriber) {
        byte[] payload = new byte[Varint.size(subscriber)];
        Varint.write(subscriber, payload, 0);
        return payload;
    }

    /** The payload of an inputRequest: subscriber, demand (1 .. 2**63 - 1). */
    public static byte[] encodeRequest(long subscriber, long demand) {
        if (demand < 1) {
            throw new IllegalArgumentException("rule 3.9: input demand must be >= 1, got " + demand + " (PROTOCOL.md §21.4)");
        }
        byte[] payload = new byte[Varint.size(subscriber) + Varint.size(demand)];
        Varint.write(demand, payload, Varint.write(subscriber, payload, 0));
        return payload;
    }

    /** The payload of an inputNext or inputNextPart (the data) or an inputError (its text as UTF-8). */
    public static byte[] encode(long subscriber, byte[] rest) {
        byte[] payload = new byte[Varint.size(subscriber) + rest.length];
        System.arraycopy(rest, 0, payload, Varint.write(subscriber, payload, 0), rest.length);
        return payload;
    }

    /**
     * A channels payload read.
     *
     * @throws ProtocolException citing §21.2: a truncated or non-minimal varint, bytes after the
     *     subscriber of channel, inputCancel or inputComplete or after inputRequest's demand, a
     *     demand of 0 or 2**63 and above, an inputError text that is not UTF-8; §4.4 for 0xA7
     */
    public static Decoded decode(int type, byte[] payload) throws ProtocolException {
        String what = name(type);
        if (what == null) {
            throw new ProtocolException(String.format("message type 0x%02x is reserved by extension channels (id 8) (PROTOCOL.md §4.4)", type));
        }
        int[] next = new int[1];
        long sid = varint(payload, 0, next, what);
        int at = next[0];
        switch (type) {
            case FrameType.CHANNEL, FrameType.INPUT_CANCEL, FrameType.INPUT_COMPLETE -> {
                if (at != payload.length) {
                    throw new ProtocolException(what + " has " + (payload.length - at) + " byte(s) after its subscriber (PROTOCOL.md §21.2)");
                }
                return new Decoded(type, sid, 0, null, null);
            }
            case FrameType.INPUT_REQUEST -> {
                long demand = varint(payload, at, next, what);
                if (next[0] != payload.length) {
                    throw new ProtocolException("inputRequest has " + (payload.length - next[0])
                            + " byte(s) after its demand (PROTOCOL.md §21.2)");
                }
                if (demand < 1) {
                    throw new ProtocolException("inputRequest demand must be 1 .. 2**63-1, got " + Long.toUnsignedString(demand)
                            + " (PROTOCOL.md §21.2)");
                }
                return new Decoded(type, sid, demand, null, null);
            }
            case FrameType.INPUT_ERROR -> {
                try {
                    String text = StandardCharsets.UTF_8.newDecoder()
                            .onMalformedInput(CodingErrorAction.REPORT)
                            .onUnmappableCharacter(CodingErrorAction.REPORT)
                            .decode(ByteBuffer.wrap(payload, at, payload.length - at)).toString();
                    return new Decoded(type, sid, 0, null, text);
                } catch (CharacterCodingException e) {
                    throw new ProtocolException("inputError text is not valid UTF-8 (PROTOCOL.md §21.2)");
                }
            }
            default -> {
                byte[] data = new byte[payload.length - at];
                System.arraycopy(payload, at, data, 0, data.length);
                return new Decoded(type, sid, 0, data, null);
            }
        }
    }

    private static long varint(byte[] payload, int at, int[] next, String what) throws ProtocolException {
        try {
            return Varint.read(payload, at, payload.length, next);
        } catch (Varint.Incomplete e) {
            throw new ProtocolException(what + ": the payload ends inside a varint (PROTOCOL.md §21.2)");
        } catch (ProtocolException e) {
            throw new ProtocolException(what + ": a non-minimal or over-long varint (PROTOCOL.md §21.2)");
        }
    }

    /** The message's name, or null for the reserved 0xA7 and types outside the extension. */
    public static String name(int type) {
        return switch (type) {
            case FrameType.CHANNEL -> "channel";
            case FrameType.INPUT_REQUEST -> "inputRequest";
            case FrameType.INPUT_CANCEL -> "inputCancel";
            case FrameType.INPUT_NEXT -> "inputNext";
            case FrameType.INPUT_COMPLETE -> "inputComplete";
            case FrameType.INPUT_ERROR -> "inputError";
            case FrameType.INPUT_NEXT_PART -> "inputNextPart";
            default -> null;
        };
    }

    // ---- the mark (§21.3), at the publisher end ---------------------------------------------

    /** A channel mark: held for the subscribe that must follow; a second one before it is a connection error. */
    public void markReceived(long subscriber) throws ProtocolException {
        if (marked) {
            throw new ProtocolException("two 0xa0 messages before one Subscribe (PROTOCOL.md §21.3)");
        }
        marked = true;
        mark = subscriber;
    }

    /**
     * The peer's subscribe for {@code subscriber} arrived: whether a mark makes it a channel. The
     * mark is used up whatever becomes of the subscribe (§21.3).
     *
     * @throws ProtocolException citing §21.3 if the mark is for another id
     */
    public boolean subscribeReceived(long subscriber) throws ProtocolException {
        if (!marked) {
            return false;
        }
        marked = false;
        if (mark != subscriber) {
            throw new ProtocolException("0xa0 for subscriber " + Long.toUnsignedString(mark) + " followed by a Subscribe for subscriber "
                    + Long.toUnsignedString(subscriber) + " (PROTOCOL.md §21.3)");
        }
        return true;
    }

    /** The peer's channel subscribe {@code subscriber} is served: its input is OPEN, with no demand yet. */
    public void opened(long subscriber) {
        theirs.put(subscriber, new InputState());
    }

    /** This end opens a channel with {@code subscriber}: its input is OPEN; returns the mark's payload, sent right before the subscribe. */
    public byte[] opening(long subscriber) {
        ours.put(subscriber, new InputState());
        return encode(subscriber);
    }

    /** The connection ended: every channel, and a pending mark, with it. */
    void clear() {
        theirs.clear();
        ours.clear();
        marked = false;
        joining = 0;
        joiningBytes = 0;
    }

    /** The subscription {@code subscriber} ended (either end's role): its input goes back to IDLE (§21.5). */
    public void outputEnded(long subscriber, boolean openedByPeer) {
        InputState in = (openedByPeer ? theirs : ours).remove(subscriber);
        if (in != null) {
            dropParts(in);
        }
    }

    // ---- input messages ---------------------------------------------------------------------

    /**
     * An input message from the peer, its extension active (the mark excepted: {@link #markReceived}).
     *
     * @return what it did, or null: dropped (an id in IDLE or ENDED, §21.5), or a part of an element still being joined
     * @throws ProtocolException a malformed payload (§21.2), an element beyond the input demand
     *     (§21.4), inputComplete amid a split element (§21.6); a joined element above
     *     {@code max_element_size} is not one: it ends that input ({@link Input.TooLarge}, §21.6)
     */
    public Input received(int type, byte[] payload) throws ProtocolException {
        Decoded d = decode(type, payload);
        long sid = d.subscriber();
        boolean fromOpener = type != FrameType.INPUT_REQUEST && type != FrameType.INPUT_CANCEL;
        if (type == FrameType.CHANNEL) {
            markReceived(sid);
            return null;
        }
        InputState in = (fromOpener ? theirs : ours).get(sid);
        if (in == null || in.state == State.ENDED) {
            return null; // it crossed the end (§21.5)
        }
        switch (type) {
            case FrameType.INPUT_REQUEST -> {
                in.demand = Connection.addDemand(in.demand, d.demand());
                return new Input.Demand(sid, d.demand());
            }
            case FrameType.INPUT_CANCEL -> {
                in.state = State.ENDED;
                return new Input.Cancelled(sid);
            }
            case FrameType.INPUT_NEXT, FrameType.INPUT_NEXT_PART -> {
                return element(in, sid, d.data(), type == FrameType.INPUT_NEXT);
            }
            default -> { // inputComplete, inputError
                if (in.parts != null && type == FrameType.INPUT_COMPLETE) {
                    throw new ProtocolException("inputComplete for subscriber " + Long.toUnsignedString(sid)
                            + " with an unfinished split input element (PROTOCOL.md §21.6)");
                }
                dropParts(in);
                in.state = State.ENDED;
                return new Input.Ended(sid, d.text());
            }
        }
    }

    private Input element(InputState in, long sid, byte[] data, boolean last) throws ProtocolException {
        if (in.parts == null) { // an element's first (or only) message takes its demand (§21.4, §21.6)
            if (in.demand == 0) {
                throw new ProtocolException((last ? "inputNext" : "inputNextPart") + " for subscriber " + Long.toUnsignedString(sid)
                        + " beyond the input demand of 0 (PROTOCOL.md §21.4)");
            }
            if (in.demand != Connection.UNBOUNDED) {
                in.demand--;
            }
            if (last) {
                return new Input.Element(sid, data);
            }
            // counted with the split output elements of the connection (§21.6)
            int output = connection == null ? 0 : connection.outputJoining();
            if (joining + output >= limits.maxPartsInFlight()) {
                throw ProtocolException.limit("more than max_parts_in_flight=" + limits.maxPartsInFlight()
                        + " split elements at once (PROTOCOL.md §11)");
            }
            in.parts = new Parts();
            joining++;
        }
        Parts p = in.parts;
        if (p.size + data.length > limits.maxElementSize()) { // that input ends, the output goes on (§21.6); later parts are dropped
            dropParts(in);
            in.state = State.ENDED;
            return new Input.TooLarge(sid, "split input element for subscriber " + Long.toUnsignedString(sid)
                    + " grows past max_element_size=" + limits.maxElementSize() + " (PROTOCOL.md §11)");
        }
        long outputBytes = connection == null ? 0 : connection.outputJoiningBytes();
        if (joiningBytes + outputBytes + data.length > limits.maxReassemblyBytes()) {
            throw ProtocolException.limit("split elements in flight exceed max_reassembly_bytes=" + limits.maxReassemblyBytes()
                    + " (PROTOCOL.md §11)");
        }
        p.size += data.length;
        joiningBytes += data.length;
        p.list.add(data);
        if (!last) {
            return null;
        }
        dropParts(in);
        byte[] whole = new byte[(int) p.size];
        int at = 0;
        for (byte[] part : p.list) {
            System.arraycopy(part, 0, whole, at, part.length);
            at += part.length;
        }
        return new Input.Element(sid, whole);
    }

    // ---- sending ----------------------------------------------------------------------------

    /**
     * The publisher end grants {@code n} more input elements on {@code subscriber}: the inputRequest's payload,
     * or null when the input is not OPEN (nothing to send).
     */
    public byte[] request(long subscriber, long n) {
        InputState in = theirs.get(subscriber);
        if (in == null || in.state != State.OPEN) {
            return null;
        }
        in.demand = Connection.addDemand(in.demand, n);
        return encodeRequest(subscriber, n);
    }

    /** The publisher end cancels the input of {@code subscriber}: the inputCancel's payload, or null when it is not OPEN. */
    public byte[] cancelInput(long subscriber) {
        InputState in = theirs.get(subscriber);
        if (in == null || in.state != State.OPEN) {
            return null;
        }
        in.state = State.ENDED;
        dropParts(in);
        return encode(subscriber);
    }

    /** The input demand the publisher granted on our channel {@code subscriber} and we have not used (0 if not OPEN). */
    public long inputDemand(long subscriber) {
        InputState in = ours.get(subscriber);
        return in == null || in.state != State.OPEN ? 0 : in.demand;
    }

    /**
     * One input element on our channel {@code subscriber}, using one input demand: the inputNext's payload.
     *
     * @throws IllegalStateException without input demand, or when the input is not OPEN
     * @throws IllegalArgumentException when the payload would be above {@code max_string_length} (§21.2)
     */
    public byte[] sendInput(long subscriber, byte[] element) {
        InputState in = ours.get(subscriber);
        if (in == null || in.state != State.OPEN || in.demand == 0) {
            throw new IllegalStateException("no input demand on channel " + Long.toUnsignedString(subscriber) + " (PROTOCOL.md §21.4)");
        }
        byte[] payload = encode(subscriber, element);
        if (payload.length > limits.maxStringLength()) {
            throw new IllegalArgumentException("an input element of " + element.length + " bytes does not fit in one inputNext "
                    + "(max_string_length = " + limits.maxStringLength() + ", PROTOCOL.md §21.2)");
        }
        if (in.demand != Connection.UNBOUNDED) {
            in.demand--;
        }
        return payload;
    }

    /**
     * One input element on our channel {@code subscriber} split into parts of at most
     * {@code partSize} bytes (extension input-parts, §21.6), using one input demand: the payloads
     * of the inputNextPart messages, then the last one, the inputNext's.
     *
     * @throws IllegalStateException without input demand, or when the input is not OPEN
     */
    public java.util.List<byte[]> sendInputParts(long subscriber, byte[] element, int partSize) {
        InputState in = ours.get(subscriber);
        if (in == null || in.state != State.OPEN || in.demand == 0) {
            throw new IllegalStateException("no input demand on channel " + Long.toUnsignedString(subscriber) + " (PROTOCOL.md §21.4)");
        }
        if (partSize < 1) {
            throw new IllegalArgumentException("partSize must be >= 1, got " + partSize);
        }
        java.util.List<byte[]> payloads = new java.util.ArrayList<>();
        int at = 0;
        do {
            int n = Math.min(partSize, element.length - at);
            byte[] data = java.util.Arrays.copyOfRange(element, at, at + n);
            payloads.add(encode(subscriber, data));
            at += n;
        } while (at < element.length);
        if (in.demand != Connection.UNBOUNDED) {
            in.demand--;
        }
        return payloads;
    }

    /** Our channel's input ended: the inputComplete ({@code error} null) or inputError payload, or null when it is not OPEN. */
    public byte[] endInput(long subscriber, String error) {
        InputState in = ours.get(subscriber);
        if (in == null || in.state != State.OPEN) {
            return null;
        }
        in.state = State.ENDED;
        return error == null ? encode(subscriber) : encode(subscriber, error.getBytes(StandardCharsets.UTF_8));
    }
}
