package io.rstreams.wire;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.testng.annotations.Test;

/**
 * An authenticate hook that throws refuses the credentials it was asked about, as rstreams'
 * {@code serve(authenticate=...)} and JavaScript's {@code listen(url, {authenticate})} do
 * (tests/net/test_auth.py, js auth.test.mjs), in the sans-I/O connection: the connection's
 * authenticate ends it with goodbye {@code authentication failed (PROTOCOL.md §15.3)}, a
 * subscribe's own credentials refuse that subscribe with onError {@code unauthenticated: ...
 * (PROTOCOL.md §15.4)}, the connection going on; both with code 3, and the exception's text,
 * which quotes the secret here, is in no frame.
 */
public class AuthenticateThrowsTest {
    private static final Set<Long> OFFERED = Set.of(FrameType.AUTH, FrameType.ERROR_CODES);
    private static final String SECRET = "s3cret-token";

    private final FrameParser parser = new FrameParser(Limits.DEFAULT);
    private final List<byte[]> written = new ArrayList<>();

    /** A server connection whose hook accepts "ann" and throws, quoting the token, for anything else. */
    private static Connection server() {
        Connection conn = new Connection(Connection.Side.SERVER, Limits.DEFAULT, OFFERED, c -> {
            if ("ann".equals(c.token())) {
                return true;
            }
            throw new IllegalStateException("cannot check " + c.token());
        });
        conn.dataToSend(); // the serverHello
        return conn;
    }

    private static void receive(Connection conn, Frame... frames) {
        for (Frame f : frames) {
            byte[] bytes = FrameWriter.encode(f, 0);
            conn.receiveData(bytes, 0, bytes.length);
        }
    }

    private List<Frame> sent(Connection conn) throws ProtocolException {
        byte[] out = conn.dataToSend();
        written.add(out);
        parser.feed(out, 0, out.length);
        return parser.parseAll();
    }

    private void assertNoSecretWritten() {
        for (byte[] out : written) {
            assertFalse(new String(out, StandardCharsets.ISO_8859_1).contains(SECRET), "the hook's text reached the peer");
        }
    }

    @Test(timeOut = 10_000)
    public void theConnectionsAuthenticateIsRefusedWithCodeThree() throws Exception {
        Connection conn = server();
        receive(conn, AuthFrames.hello(), new Frame.Subscribe("news", 1, 1), AuthFrames.authenticate(SECRET));
        assertEquals(sent(conn), List.of(
                new Frame.Extension(FrameType.GOODBYE_CODE, Connection.goodbyeCodePayload(ErrorCode.UNAUTHENTICATED.value())),
                new Frame.Goodbye("authentication failed (PROTOCOL.md §15.3)")), "the held subscribe ends unanswered (§15.3)");
        assertEquals(conn.state(), Connection.State.CLOSED);
        Event.Closed closed = null;
        for (Event e : conn.events()) {
            if (e instanceof Event.Closed c) {
                closed = c;
            }
        }
        assertTrue(closed != null && closed.code() == ErrorCode.UNAUTHENTICATED.value()
                && closed.reason().equals("authentication failed (PROTOCOL.md §15.3)"), String.valueOf(closed));
        assertNoSecretWritten();
    }

    @Test(timeOut = 10_000)
    public void aSubscribesOwnCredentialsAreRefusedWithCodeThreeAndTheConnectionGoesOn() throws Exception {
        Connection conn = server();
        receive(conn, AuthFrames.hello(), AuthFrames.authenticate("ann"));
        assertEquals(sent(conn), List.of(new Frame.Extension(FrameType.AUTHENTICATED, new byte[0])));
        receive(conn, AuthFrames.subscribeCredentials(1, SECRET), new Frame.Subscribe("vault?key=x", 1, 1));
        assertEquals(sent(conn), List.of(
                new Frame.Extension(FrameType.ERROR_CODE, Connection.errorCodePayload(1, ErrorCode.UNAUTHENTICATED.value())),
                new Frame.OnError(1, "unauthenticated: subscribe to 'vault' needs valid credentials (PROTOCOL.md §15.4)")));
        assertEquals(conn.state(), Connection.State.OPEN);
        receive(conn, new Frame.Subscribe("news", 2, 1));
        boolean served = false;
        for (Event e : conn.events()) {
            served |= e instanceof Event.Subscribed s && s.id() == 2 && s.name().equals("news");
        }
        assertTrue(served, "the next subscribe, with the connection's credentials, goes on");
        assertNoSecretWritten();
    }
}
