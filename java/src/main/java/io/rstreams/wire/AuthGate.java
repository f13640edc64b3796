package io.rstreams.wire;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;

/**
 * Extension auth as a server enforces it (PROTOCOL.md §15.2-§15.5): whether the client must
 * still authenticate (subscribes are held meanwhile), the one authenticate, and the credentials
 * sent for single subscribes. Sans-I/O; {@link Connection} owns one when it checks credentials.
 */
final class AuthGate {
    private final Predicate<Credentials> check;
    private final int maxCredentials;
    private final Map<Long, Boolean> perSubscribe = new HashMap<>();
    private boolean pending;
    private boolean done;

    AuthGate(Predicate<Credentials> check, int maxCredentials) {
        this.check = check;
        this.maxCredentials = maxCredentials;
    }

    /** The clientHello arrived with these extensions active: auth is required (§15.2). */
    void helloReceived(Set<Long> active) throws ProtocolException {
        if (!active.contains(FrameType.AUTH)) {
            throw new ProtocolException("authentication required: this server needs extension auth (id 2), "
                    + "which the clientHello does not list (PROTOCOL.md §15.2)", ErrorCode.UNAUTHENTICATED);
        }
        pending = true;
    }

    /** Whether subscribes must wait for the authenticate (§15.3). */
    boolean holding() {
        return pending;
    }

    /**
     * The client's authenticate: accepted (the caller answers authenticated and releases the
     * held subscribes), or a protocol error whose text names no secret.
     */
    void authenticate(byte[] payload) throws ProtocolException {
        if (done) {
            throw new ProtocolException("a second authenticate (PROTOCOL.md §15.5)");
        }
        Credentials c = Credentials.decode(payload, 0, payload.length);
        if (!check.test(c)) {
            throw new ProtocolException("authentication failed (PROTOCOL.md §15.3)", ErrorCode.UNAUTHENTICATED);
        }
        pending = false;
        done = true;
    }

    /** subscribeCredentials: credentials for the next subscribe with that id (§15.4). */
    void subscribeCredentials(byte[] payload) throws ProtocolException {
        int[] next = new int[1];
        long id;
        try {
            id = Varint.read(payload, 0, payload.length, next);
        } catch (Varint.Incomplete e) {
            throw new ProtocolException("malformed subscribeCredentials (PROTOCOL.md §15.5)");
        }
        Credentials c = Credentials.decode(payload, next[0], payload.length);
        if (perSubscribe.size() >= maxCredentials) {
            throw ProtocolException.limit("more than max_subscriptions=" + maxCredentials
                    + " subscribeCredentials held (PROTOCOL.md §15.4)");
        }
        perSubscribe.put(id, check.test(c));
    }

    /** False if the subscribe with {@code id} carries refused credentials; consumes them. */
    boolean admits(long id) {
        return !Boolean.FALSE.equals(perSubscribe.remove(id));
    }

    /**
     * The refusal of a subscribe whose credentials were refused (PROTOCOL.md §15.4): names the
     * publisher by its path as §5.5 quotes it (up to its first '?', as written), never the
     * credentials; the same text in every binding.
     */
    static String unauthenticated(String name) {
        int q = name.indexOf('?');
        return "unauthenticated: subscribe to '" + (q < 0 ? name : name.substring(0, q)) + "' needs valid credentials (PROTOCOL.md §15.4)";
    }
}
