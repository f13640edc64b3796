package io.rstreams.wire;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * Credentials of extension auth (PROTOCOL.md §15.1): a token (kind 1) or a user and password
 * (kind 2). Secrets never appear in {@link #toString()}.
 */
public final class Credentials {
    private final String token;
    private final String user;
    private final String password;

    private Credentials(String token, String user, String password) {
        this.token = token;
        this.user = user;
        this.password = password;
    }

    /**
     * @param token the token (kind 1)
     * @return token credentials
     */
    public static Credentials token(String token) {
        return new Credentials(token, null, null);
    }

    /**
     * @param user the user name (kind 2)
     * @param password the password
     * @return user/password credentials
     */
    public static Credentials userPassword(String user, String password) {
        return new Credentials(null, user, password);
    }

    /** @return the token, or null for user/password credentials */
    public String token() {
        return token;
    }

    /** @return the user, or null for a token */
    public String user() {
        return user;
    }

    /** @return the password, or null for a token */
    public String password() {
        return password;
    }

    /** @return the wire form (§15.1): kind u8, then the strings */
    public byte[] encode() {
        byte[] a = (token != null ? token : user).getBytes(StandardCharsets.UTF_8);
        byte[] b = token != null ? null : password.getBytes(StandardCharsets.UTF_8);
        byte[] out = new byte[1 + Varint.size(a.length) + a.length + (b == null ? 0 : Varint.size(b.length) + b.length)];
        out[0] = (byte) (token != null ? 1 : 2);
        int p = Varint.write(a.length, out, 1);
        System.arraycopy(a, 0, out, p, a.length);
        p += a.length;
        if (b != null) {
            p = Varint.write(b.length, out, p);
            System.arraycopy(b, 0, out, p, b.length);
        }
        return out;
    }

    /**
     * Reads credentials from {@code buf[pos, end)}, which they must fill exactly.
     *
     * @throws ProtocolException if malformed (§15.1, §15.5)
     */
    static Credentials decode(byte[] buf, int pos, int end) throws ProtocolException {
        try {
            if (pos >= end) {
                throw new ProtocolException("malformed credentials: empty (PROTOCOL.md §15.5)");
            }
            int kind = buf[pos] & 0xFF;
            int[] next = {pos + 1};
            String first = string(buf, next, end);
            Credentials c;
            if (kind == 1) {
                c = token(first);
            } else if (kind == 2) {
                c = userPassword(first, string(buf, next, end));
            } else {
                throw new ProtocolException("malformed credentials: unknown kind " + kind + " (PROTOCOL.md §15.5)");
            }
            if (next[0] != end) {
                throw new ProtocolException("malformed credentials: bytes after the fields (PROTOCOL.md §15.5)");
            }
            return c;
        } catch (Varint.Incomplete e) {
            throw new ProtocolException("malformed credentials: truncated (PROTOCOL.md §15.5)");
        }
    }

    private static String string(byte[] buf, int[] next, int end) throws Varint.Incomplete, ProtocolException {
        long len = Varint.read(buf, next[0], end, next);
        if (len < 0 || len > end - next[0]) {
            throw Varint.Incomplete.UNKNOWN;
        }
        String s;
        try { // strict: invalid bytes are an error, never replaced (§2.2)
            s = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(buf, next[0], (int) len)).toString();
        } catch (CharacterCodingException e) {
            throw new ProtocolException("malformed credentials: a string that is not valid UTF-8 (PROTOCOL.md §2.2, §15.5)");
        }
        next[0] += (int) len;
        return s;
    }

    @Override
    public String toString() {
        return token != null ? "Credentials[token]" : "Credentials[user=" + user + "]";
    }
}
