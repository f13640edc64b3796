package io.rstreams.wire;

/** The message type codes of PROTOCOL.md §3: the one table of them. */
public final class FrameType {
    /** clientHello (§4.1). */
    public static final int CLIENT_HELLO = 0x01;
    /** serverHello (§4.1). */
    public static final int SERVER_HELLO = 0x02;
    /** goodbye (§9). */
    public static final int GOODBYE = 0x03;
    /** subscribe (§5). */
    public static final int SUBSCRIBE = 0x04;
    /** request (§6). */
    public static final int REQUEST = 0x05;
    /** cancel (§5.4). */
    public static final int CANCEL = 0x06;
    /** onSubscribe (§5.2). */
    public static final int ON_SUBSCRIBE = 0x07;
    /** onNext (§7). */
    public static final int ON_NEXT = 0x08;
    /** onNextPacked (§7). */
    public static final int ON_NEXT_PACKED = 0x09;
    /** onNextPart (§8). */
    public static final int ON_NEXT_PART = 0x0A;
    /** onNextLastPart (§8). */
    public static final int ON_NEXT_LAST_PART = 0x0B;
    /** onComplete (§5.4). */
    public static final int ON_COMPLETE = 0x0C;
    /** onError. */
    public static final int ON_ERROR = 0x0D;
    /** The first extension message type (§4.4): every type from here on has a length prefix. */
    public static final int FIRST_EXTENSION = 0x80;

    /** keepalive (extension 1) ping, §14. */
    public static final int PING = 0x80;
    /** keepalive (extension 1) pong, §14. */
    public static final int PONG = 0x81;
    /** auth (extension 2) authenticate, client to server, §15. */
    public static final int AUTHENTICATE = 0x84;
    /** auth (extension 2) authenticated, server to client, §15. */
    public static final int AUTHENTICATED = 0x85;
    /** auth (extension 2) subscribeCredentials, §15. */
    public static final int SUBSCRIBE_CREDENTIALS = 0x86;

    /** resume (extension 3) resumeToken, server to client, §16.2. */
    public static final int RESUME_TOKEN = 0x88;
    /** resume (extension 3) resume, the first message of a new transport, §16.2. */
    public static final int RESUME = 0x89;
    /** resume (extension 3) resumed, §16.2. */
    public static final int RESUMED = 0x8A;
    /** resume (extension 3) resumeRefused, §16.2. */
    public static final int RESUME_REFUSED = 0x8B;
    /** resume (extension 3) resumeAck, §16.4. */
    public static final int RESUME_ACK = 0x8C;

    /** content-types (extension 4) contentType, publisher to subscriber, right before the onSubscribe it qualifies, §17.1. */
    public static final int CONTENT_TYPE = 0x90;
    /** metadata (extension 5) subscribeMetadata, subscriber to publisher, right before the subscribe it qualifies, §18.1. */
    public static final int SUBSCRIBE_METADATA = 0x94;

    /** error-codes (extension 6) errorCode, publisher to subscriber, right before the onError it qualifies, §19.1. */
    public static final int ERROR_CODE = 0x98;
    /** error-codes (extension 6) goodbyeCode, either way, right before the goodbye it qualifies, §19.1. */
    public static final int GOODBYE_CODE = 0x99;

    /** messages (extension 7) message, either way: a handler's name and a body, §20.2. */
    public static final int MESSAGE = 0x9C;
    /** messages (extension 7) messageCredit, from the receiver of messages to their sender, §20.3. */
    public static final int MESSAGE_CREDIT = 0x9D;

    /** channels (extension 8) channel, opener to publisher: the next subscribe with this id opens a channel, §21.3. */
    public static final int CHANNEL = 0xA0;
    /** channels (extension 8) inputRequest, publisher to opener: input demand, §21.4. */
    public static final int INPUT_REQUEST = 0xA1;
    /** channels (extension 8) inputCancel, publisher to opener: no more input, §21.5. */
    public static final int INPUT_CANCEL = 0xA2;
    /** channels (extension 8) inputNext, opener to publisher: one input element (or the last part of one), §21.2. */
    public static final int INPUT_NEXT = 0xA3;
    /** channels (extension 8) inputComplete, opener to publisher, §21.5. */
    public static final int INPUT_COMPLETE = 0xA4;
    /** channels (extension 8) inputError, opener to publisher: the input failed (UTF-8 text), §21.5. */
    public static final int INPUT_ERROR = 0xA5;
    /** input-parts (extension 9) inputNextPart, opener to publisher: a part of an input element, §21.6. */
    public static final int INPUT_NEXT_PART = 0xA6;

    /** Extension id of keepalive (§14). */
    public static final long KEEPALIVE = 1;
    /** Extension id of auth (§15). */
    public static final long AUTH = 2;
    /** Extension id of resume (§16). */
    public static final long RESUME_EXTENSION = 3;
    /** Extension id of content-types (§17); offered by every connection. */
    public static final long CONTENT_TYPES = 4;
    /** Extension id of metadata (§18); offered by every connection. */
    public static final long METADATA = 5;
    /** Extension id of error-codes (§19); offered by every connection. */
    public static final long ERROR_CODES = 6;
    /** Extension id of messages (§20); offered by every connection. */
    public static final long MESSAGES = 7;
    /** Extension id of channels (§21); framed and routed by the core, not offered by the net layer. */
    public static final long CHANNELS = 8;
    /** Extension id of input-parts (§21.6): inputNextPart, taken from channels' range. */
    public static final long INPUT_PARTS = 9;

    private FrameType() {}

    /**
     * The extension that owns an extension message type (§4.4).
     *
     * @param type a type byte in 0x80..0xFF
     * @return its extension's id, or -1 if no extension owns it
     */
    public static long owner(int type) {
        if (type == 0x80 || type == 0x81) {
            return KEEPALIVE;
        }
        if (type >= 0x84 && type <= 0x87) {
            return AUTH;
        }
        if (type >= 0x88 && type <= 0x8F) {
            return RESUME_EXTENSION;
        }
        if (type >= 0x90 && type <= 0x93) {
            return CONTENT_TYPES;
        }
        if (type >= 0x94 && type <= 0x97) {
            return METADATA;
        }
        if (type >= 0x98 && type <= 0x9B) {
            return ERROR_CODES;
        }
        if (type >= 0x9C && type <= 0x9F) {
            return MESSAGES;
        }
        if (type >= 0xA0 && type <= 0xA7) {
            return CHANNELS;
        }
        return -1;
    }

    /**
     * Whether an extension owns {@code type} without defining a message for it: receiving one is a
     * connection error even while that extension is active (§4.4).
     *
     * @param type a type byte in 0x80..0xFF
     * @return true for auth's 0x87, resume's 0x8D..0x8F, content-types' 0x91..0x93, metadata's
     *     0x95..0x97, error-codes' 0x9A..0x9B, messages' 0x9E..0x9F and channels' 0xA7
     */
    public static boolean reserved(int type) {
        return type == 0x87 || (type >= 0x8D && type <= 0x8F) || (type >= 0x91 && type <= 0x93) || (type >= 0x95 && type <= 0x97)
                || type == 0x9A || type == 0x9B || type == 0x9E || type == 0x9F || type == 0xA7;
    }

    /**
     * The name of an extension, for messages.
     *
     * @param id an extension id
     * @return its name, or "unknown"
     */
    public static String extensionName(long id) {
        return id == KEEPALIVE ? "keepalive" : id == AUTH ? "auth" : id == RESUME_EXTENSION ? "resume"
                : id == CONTENT_TYPES ? "content-types" : id == METADATA ? "metadata"
                : id == ERROR_CODES ? "error-codes" : id == MESSAGES ? "messages" : id == CHANNELS ? "channels" : "unknown";
    }
}
