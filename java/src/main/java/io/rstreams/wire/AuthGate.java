package io.rstreams.wire;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;

/**
 * Extension auth as a server enforces it (PROTOCOL.md §15.2-§15.5): whether the client must
 * still authenticate (subscribes are held meanwhile), the one authenticate, the credentials
 * sent for single subscribes, and whether the credentials a subscribe goes with may use its
 * name (the authorize hook). Sans-I/O; {@link Connection} owns one when it checks credentials.
 */
final class AuthGate {
    private final Predicate<Credentials> check;
    private final Authorizer authorize; // null: every name
    private final int maxCredentials;
    // a subscribe's own credentials by its id, null when refused (§15.4)
    private final Map<Long, Credentials> perSubscribe = new HashMap<>();
    private Credentials accepted; // the connection's, once its authenticate is accepted
    private boolean pending;
    private boolean done;
    private boolean required; // false: a client without auth is served unauthenticated (§15.2)

    /**
     * {@code check} null: no credentials are checked (the server does not offer auth, so no
     * authenticate can come, §4.4): every client is served without a principal and the
     * authorizer asked with null credentials, as rstreams' {@code serve(authorize=...)} alone.
     */
    AuthGate(Predicate<Credentials> check, Authorizer authorize, int maxCredentials) {
        this.check = check;
        this.authorize = authorize;
        this.maxCredentials = maxCredentials;
        this.required = check != null;
    }

    /** Whether credentials are checked: an authenticate hook was given. */
    boolean checksCredentials() {
        return check != null;
    }

    /**
     * Whether a client must authenticate (§15.2): true by default; false serves a client whose
     * hello does not list auth without a principal (the authorizer is asked with null
     * credentials), while a client that lists it must still authenticate, and be accepted.
     */
    void required(boolean required) {
        this.required = required;
    }

    /** Whether a client must authenticate (§15.2). */
    boolean required() {
        return required;
    }

    /** The clientHello arrived with these extensions active: auth is required unless optional (§15.2). */
    void helloReceived(Set<Long> active) throws ProtocolException {
        if (!active.contains(FrameType.AUTH)) {
            if (!required) {
                return; // served unauthenticated: no principal (§15.4); auth is not active, so no authenticate can come (§4.4)
            }
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
     * held subscribes), or a protocol error whose text names no secret: refused, by the hook's
     * false or its throw, it is code 3 and {@code authentication failed (PROTOCOL.md §15.3)}.
     */
    void authenticate(byte[] payload) throws ProtocolException {
        if (done) {
            throw new ProtocolException("a second authenticate (PROTOCOL.md §15.5)");
        }
        Credentials c = Credentials.decode(payload, 0, payload.length);
        if (!accepts(c)) {
            throw new ProtocolException("authentication failed (PROTOCOL.md §15.3)", ErrorCode.UNAUTHENTICATED);
        }
        accepted = c;
        pending = false;
        done = true;
    }

    /**
     * subscribeCredentials: credentials for the next subscribe with that id (§15.4), replacing
     * any held for it; at most max_subscriptions ids are held, as rstreams holds them.
     */
    void subscribeCredentials(byte[] payload) throws ProtocolException {
        int[] next = new int[1];
        long id;
        try {
            id = Varint.read(payload, 0, payload.length, next);
        } catch (Varint.Incomplete e) {
            throw new ProtocolException("malformed subscribeCredentials (PROTOCOL.md §15.5)");
        }
        Credentials c = Credentials.decode(payload, next[0], payload.length);
        if (!perSubscribe.containsKey(id) && perSubscribe.size() >= maxCredentials) { // a replacement holds no more
            throw ProtocolException.limit("more subscribeCredentials held than max_subscriptions (PROTOCOL.md §15.4)");
        }
        perSubscribe.put(id, accepts(c) ? c : null);
    }

    /**
     * Whether the authenticate hook accepts {@code c}; a hook that throws refuses them, as
     * rstreams' {@code serve(authenticate=...)} does (§15.3, §15.4): the exception is neither
     * passed on nor quoted, as its text could quote the credentials (the caller's hook logs it).
     */
    private boolean accepts(Credentials c) {
        try {
            return check != null && check.test(c);
        } catch (RuntimeException e) {
            return false;
        }
    }

    /**
     * Whether the subscribe with {@code id} to {@code name} goes on: null if so, else its
     * refusal, code 3 when its own credentials were refused, else whatever the authorize hook
     * answers for the credentials it goes with (its own, else the connection's), the name as
     * written and its {@code metadata} (§15.4, §18.1). A hook that throws refuses, code 4.
     * Consumes the subscribe's credentials.
     */
    Authorizer.Refusal admit(long id, String name, SubscribeMetadata metadata) {
        Credentials c = accepted;
        if (perSubscribe.containsKey(id)) {
            c = perSubscribe.remove(id);
            if (c == null) {
                return new Authorizer.Refusal(unauthenticated(name), ErrorCode.UNAUTHENTICATED.value());
            }
        }
        if (authorize == null) {
            return null;
        }
        try {
            return authorize.authorize(c, name, metadata);
        } catch (RuntimeException e) { // its text could quote the credentials: the caller's hook logs
            return Authorizer.unauthorized(name);
        }
    }

    /**
     * Why a message to {@code name}, received once the authenticate is settled, is dropped
     * (§20.4), or null: the authorize hook asked as for a subscribe, with the connection's
     * credentials and the name as written; anything but true (a throw included) drops it.
     */
    String admitMessage(String name) {
        if (accepted == null && required) {
            return "unauthenticated";
        }
        if (authorize == null) {
            return null;
        }
        try {
            return authorize.authorize(accepted, name, SubscribeMetadata.EMPTY) == null ? null : "unauthorized";
        } catch (RuntimeException e) { // its text could quote the credentials
            return "unauthorized";
        }
    }

    /**
     * The refusal of a subscribe whose credentials were refused (PROTOCOL.md §15.4): names the
     * publisher by its path as §5.5 quotes it (up to its first '?', as written), never the
     * credentials; the same text in every binding.
     */
    static String unauthenticated(String name) {
        return "unauthenticated: subscribe to '" + path(name) + "' needs valid credentials (PROTOCOL.md §15.4)";
    }

    /**
     * The refusal of a subscribe the authorize hook refused (PROTOCOL.md §15.4, code 4), its
     * path quoted as in {@link #unauthenticated}; the same text in every binding.
     */
    static String unauthorized(String name) {
        return "unauthorized: subscribe to '" + path(name) + "' is not allowed for this principal (PROTOCOL.md §15.4)";
    }

    private static String path(String name) {
        int q = name.indexOf('?');
        return q < 0 ? name : name.substring(0, q);
    }
}
