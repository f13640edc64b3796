package io.rstreams.wire;

import java.util.List;

/** Frames a client sends a server that offers auth (PROTOCOL.md §15), for the server-side tests. */
final class AuthFrames {
    private AuthFrames() {}

    /** A client's hello listing auth and error codes. */
    static Frame hello() {
        return new Frame.Hello(false, 0, List.of(FrameType.AUTH, FrameType.ERROR_CODES));
    }

    /** The connection's credentials, a token (§15.3). */
    static Frame authenticate(String token) {
        return new Frame.Extension(FrameType.AUTHENTICATE, Credentials.token(token).encode());
    }

    /** Credentials of subscriber {@code id} only, a token (§15.4): its id, then the credentials. */
    static Frame subscribeCredentials(long id, String token) {
        byte[] c = Credentials.token(token).encode();
        byte[] payload = new byte[Varint.size(id) + c.length];
        System.arraycopy(c, 0, payload, Varint.write(id, payload, 0), c.length);
        return new Frame.Extension(FrameType.SUBSCRIBE_CREDENTIALS, payload);
    }
}
