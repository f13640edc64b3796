package io.rstreams.wire;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Extension messages (PROTOCOL.md §20) without I/O: the payloads of message (0x9C) and
 * messageCredit (0x9D), and one connection's message credit in both directions.
 *
 * <p>Theory of operation. A {@link Connection} that offers id 7 owns one. As the receiver, it
 * grants {@link #window} messages once the peer's hello shows the extension active; each
 * message received uses one grant (none left: the connection error of §20.3) and holds it
 * until the caller says it was handled or dropped ({@link #handled}); the credits freed go back
 * in one messageCredit when the caller asks ({@link #grantFreed}, once per event-loop turn). A
 * message that arrives while a server still waits for the client's authenticate is held, its
 * credit with it, until the authenticate is settled (§20.4). As the sender, every messageCredit
 * adds to {@link #credit} (saturating at 2**63 - 1) and every {@link #send} takes one; without
 * credit a send is refused locally: the caller waits for the next {@link Event.MessageCredit}.
 * Nothing is queued beyond the credit on either side.
 */
public final class Messages {
    /** The credit a receiver grants unless told otherwise, as rstreams' {@code max_messages_in_flight}. */
    public static final int DEFAULT_WINDOW = 16;

    /** A message's payload read: the handler's name and the body (§20.2). */
    public record Decoded(String name, byte[] body) {}

    private final Connection conn;
    private int window = DEFAULT_WINDOW;
    private boolean started;
    private long granted; // credit we granted and the peer has not used
    private long freed; // credit to grant again with the next messageCredit
    private long credit; // what the peer granted us and we have not used
    private final List<Decoded> held = new ArrayList<>(); // waiting for the client's authenticate (§20.4)

    Messages(Connection conn) {
        this.conn = conn;
    }

    // ---- payloads ---------------------------------------------------------------------------

    /** The payload of a message to handler {@code name} carrying {@code body} (§20.2). */
    public static byte[] encodeMessage(String name, byte[] body) {
        byte[] raw = name.getBytes(StandardCharsets.UTF_8);
        byte[] payload = new byte[Varint.size(raw.length) + raw.length + body.length];
        int at = Varint.write(raw.length, payload, 0);
        System.arraycopy(raw, 0, payload, at, raw.length);
        System.arraycopy(body, 0, payload, at + raw.length, body.length);
        return payload;
    }

    /**
     * A message's name and body.
     *
     * @throws ProtocolException citing §20.2: a name length that is not a minimal varint or runs past the payload, a name not UTF-8
     */
    public static Decoded decodeMessage(byte[] payload) throws ProtocolException {
        int[] next = new int[1];
        long length;
        try {
            length = Varint.read(payload, 0, payload.length, next);
        } catch (Varint.Incomplete e) {
            throw new ProtocolException("message payload ends inside its name's length (PROTOCOL.md §20.2)");
        } catch (ProtocolException e) {
            throw new ProtocolException("message name length: a non-minimal or over-long varint (PROTOCOL.md §20.2)");
        }
        if (length < 0 || length > payload.length - next[0]) {
            throw new ProtocolException("message name of " + Long.toUnsignedString(length) + " bytes in a payload of "
                    + payload.length + " (PROTOCOL.md §20.2)");
        }
        int end = next[0] + (int) length;
        String name;
        try {
            name = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(payload, next[0], (int) length)).toString();
        } catch (CharacterCodingException e) {
            throw new ProtocolException("message name is not valid UTF-8 (PROTOCOL.md §20.2)");
        }
        byte[] body = new byte[payload.length - end];
        System.arraycopy(payload, end, body, 0, body.length);
        return new Decoded(name, body);
    }

    /** The payload of a messageCredit granting {@code count} (1 .. 2**63 - 1) more messages (§20.2). */
    public static byte[] encodeCredit(long count) {
        if (count < 1) {
            throw new IllegalArgumentException("a messageCredit count is 1 .. 2**63 - 1, got " + count + " (PROTOCOL.md §20.2)");
        }
        byte[] payload = new byte[Varint.size(count)];
        Varint.write(count, payload, 0);
        return payload;
    }

    /**
     * A messageCredit's count.
     *
     * @throws ProtocolException citing §20.2: not one whole minimal varint, bytes after it, 0, or 2**63 and above
     */
    public static long decodeCredit(byte[] payload) throws ProtocolException {
        int[] next = new int[1];
        long count;
        try {
            count = Varint.read(payload, 0, payload.length, next);
        } catch (Varint.Incomplete e) {
            throw new ProtocolException("messageCredit payload is not a whole varint (PROTOCOL.md §20.2)");
        } catch (ProtocolException e) {
            throw new ProtocolException("messageCredit count: a non-minimal or over-long varint (PROTOCOL.md §20.2)");
        }
        if (next[0] != payload.length) {
            throw new ProtocolException("messageCredit has " + (payload.length - next[0]) + " byte(s) after its count (PROTOCOL.md §20.2)");
        }
        if (count < 1) {
            throw new ProtocolException("messageCredit count must be 1 .. 2**63-1, got " + Long.toUnsignedString(count)
                    + " (PROTOCOL.md §20.2)");
        }
        return count;
    }

    // ---- the credit -------------------------------------------------------------------------

    /**
     * Sets the credit this end grants the peer (rstreams' {@code max_messages_in_flight}); before the peer's hello only.
     *
     * @throws IllegalArgumentException below 1
     * @throws IllegalStateException once the first grant went out
     */
    public void window(int messages) {
        if (messages < 1) {
            throw new IllegalArgumentException("maxMessagesInFlight must be >= 1, got " + messages + " (PROTOCOL.md §20.3)");
        }
        if (started) {
            throw new IllegalStateException("the message credit is granted at the peer's hello: set it before (PROTOCOL.md §20.3)");
        }
        window = messages;
    }

    /** @return the credit this end grants (§20.3) */
    public int window() {
        return window;
    }

    /** Whether both hellos list extension messages (false until the peer's hello). */
    public boolean active() {
        return conn.activeExtensions().contains(FrameType.MESSAGES);
    }

    /** @return the messages this end may still send: the peer's grants not yet used (§20.3) */
    public long credit() {
        return credit;
    }

    /** The peer's hello arrived: the first grant, if the extension is active (§20.3). */
    void helloReceived() {
        started = true;
        if (active()) {
            granted = window;
            conn.sendExtension(FrameType.MESSAGE_CREDIT, encodeCredit(window));
        }
    }

    /**
     * A message or messageCredit from the peer, its extension active.
     *
     * @param gate the server's auth (§20.4: a message waits for the authenticate, then is authorized by name), or null
     * @return the event for it; null for a message held until the client's authenticate is settled
     * @throws ProtocolException a malformed payload (§20.2), a message beyond the credit (§20.3)
     */
    Event received(int type, byte[] payload, AuthGate gate) throws ProtocolException {
        if (type == FrameType.MESSAGE_CREDIT) {
            long count = decodeCredit(payload);
            credit = Connection.addDemand(credit, count);
            return new Event.MessageCredit(count);
        }
        if (granted == 0) {
            throw new ProtocolException("message beyond the granted message credit (" + window + " in flight at most) (PROTOCOL.md §20.3)");
        }
        Decoded m = decodeMessage(payload);
        granted--;
        if (gate != null && gate.holding()) {
            held.add(m); // bounded by the credit it holds
            return null;
        }
        return new Event.Message(m.name(), m.body(), gate == null ? null : gate.admitMessage(m.name()));
    }

    /** The messages held for the authenticate, now settled; each refused or not by {@code gate} (§20.4). */
    List<Event> release(AuthGate gate) {
        List<Event> out = new ArrayList<>(held.size());
        for (Decoded m : held) {
            out.add(new Event.Message(m.name(), m.body(), gate.admitMessage(m.name())));
        }
        held.clear();
        return out;
    }

    /**
     * Sends a message to the peer's handler {@code name}, using one credit (§20.3).
     *
     * @throws IllegalStateException the extension is not active (§20.1), there is no credit (§20.3), or the connection is closing
     * @throws IllegalArgumentException the name and body above {@code max_string_length} (§20.2)
     */
    public void send(String name, byte[] body) {
        byte[] payload = encodeMessage(name, body);
        if (payload.length > conn.limits().maxStringLength()) {
            throw new IllegalArgumentException("message of " + payload.length + " bytes (name and body) above max_string_length = "
                    + conn.limits().maxStringLength() + ": an extension message's payload is limited by it (PROTOCOL.md §20.2)");
        }
        if (!active()) {
            throw new IllegalStateException(notActive());
        }
        if (credit < 1) {
            throw new IllegalStateException("no message credit to send to '" + name + "': the peer's handlers hold all of it "
                    + "(PROTOCOL.md §20.3)");
        }
        conn.sendExtension(FrameType.MESSAGE, payload);
        credit--;
    }

    /** {@code count} messages received are over (handled, or dropped): their credit goes back with {@link #grantFreed}. */
    public void handled(int count) {
        freed += count;
    }

    /** Grants the freed credit again in one messageCredit, if any is freed and the connection is open (§20.3). */
    public void grantFreed() {
        if (freed == 0 || conn.state() != Connection.State.OPEN) {
            return;
        }
        granted += freed;
        conn.sendExtension(FrameType.MESSAGE_CREDIT, encodeCredit(freed));
        freed = 0;
    }

    /** The refusal of a send to a peer whose hello does not list id 7, as rstreams' (§20.1). */
    public static String notActive() {
        return "can't send a message: the peer does not offer extension messages (id 7) (PROTOCOL.md §20.1); "
                + "its hello does not list it";
    }

    /** The connection ended: held messages are lost, the credit of both directions with them (§20.3). */
    void closed() {
        held.clear();
        credit = 0;
        freed = 0;
    }
}
