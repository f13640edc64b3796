package io.rstreams.wire;

/** The message type codes of PROTOCOL.md §3: the one table of them. */
public final class FrameType {
    public static final int CLIENT_HELLO = 0x01;
    public static final int SERVER_HELLO = 0x02;
    public static final int GOODBYE = 0x03;
    public static final int SUBSCRIBE = 0x04;
    public static final int REQUEST = 0x05;
    public static final int CANCEL = 0x06;
    public static final int ON_SUBSCRIBE = 0x07;
    public static final int ON_NEXT = 0x08;
    public static final int ON_NEXT_PACKED = 0x09;
    public static final int ON_NEXT_PART = 0x0A;
    public static final int ON_NEXT_LAST_PART = 0x0B;
    public static final int ON_COMPLETE = 0x0C;
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

    /** Extension ids (§4.4). */
    public static final long KEEPALIVE = 1;
    public static final long AUTH = 2;
    public static final long RESUME = 3;

    private FrameType() {}

    /** The id of the extension that owns extension message {@code type}, or -1 if none does (§4.4). */
    public static long owner(int type) {
        if (type == 0x80 || type == 0x81) {
            return KEEPALIVE;
        }
        if (type >= 0x84 && type <= 0x87) {
            return AUTH;
        }
        if (type >= 0x88 && type <= 0x8F) {
            return RESUME;
        }
        return -1;
    }

    /** The name of extension {@code id}, for messages. */
    public static String extensionName(long id) {
        return id == KEEPALIVE ? "keepalive" : id == AUTH ? "auth" : id == RESUME ? "resume" : "unknown";
    }
}
