package io.rstreams.wire;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import java.util.List;
import java.util.Set;
import org.testng.annotations.Test;

/**
 * A client's subscribe with credentials of its own (PROTOCOL.md §15.4) in the sans-I/O
 * connection: subscribeCredentials for the subscribe's id right before it, once the peer's hello
 * made extension auth active; before that, or without auth, it is refused locally.
 */
public class ClientSubscribeCredentialsTest {
    private static Connection client() {
        Connection conn = new Connection(Connection.Side.CLIENT, Limits.DEFAULT, Set.of(FrameType.AUTH));
        conn.dataToSend(); // the clientHello
        return conn;
    }

    private static void hello(Connection conn, List<Long> extensions) {
        byte[] bytes = FrameWriter.encode(new Frame.Hello(true, 0, extensions), 0);
        conn.receiveData(bytes, 0, bytes.length);
    }

    private static List<Frame> sent(Connection conn) throws ProtocolException {
        byte[] out = conn.dataToSend();
        FrameParser parser = new FrameParser(Limits.DEFAULT);
        parser.feed(out, 0, out.length);
        return parser.parseAll();
    }

    @Test(timeOut = 10_000)
    public void theCredentialsGoRightBeforeTheSubscribeWithItsId() throws Exception {
        Connection conn = client();
        hello(conn, List.of(FrameType.AUTH));
        conn.subscribe("news", 1);
        long id = conn.subscribe("vault?k=v", 3, Credentials.userPassword("ann", "pw"));
        assertEquals(id, 2);
        byte[] c = Credentials.userPassword("ann", "pw").encode();
        byte[] payload = new byte[1 + c.length];
        payload[0] = 2;
        System.arraycopy(c, 0, payload, 1, c.length);
        assertEquals(sent(conn), List.of(new Frame.Subscribe("news", 1, 1),
                new Frame.Extension(FrameType.SUBSCRIBE_CREDENTIALS, payload), new Frame.Subscribe("vault?k=v", 2, 3)));
    }

    @Test(timeOut = 10_000)
    public void withoutActiveAuthTheyAreRefusedLocally() throws Exception {
        Connection before = client();
        IllegalStateException e = expectThrows(IllegalStateException.class,
                () -> before.subscribe("vault", 1, Credentials.token("secret-x")));
        assertTrue(e.getMessage().contains("extension auth (id 2)") && !e.getMessage().contains("secret-x"), e.getMessage());
        assertEquals(sent(before), List.of(), "nothing sent, no id taken");
        Connection without = client();
        hello(without, List.of());
        expectThrows(IllegalStateException.class, () -> without.subscribe("vault", 1, Credentials.token("secret-x")));
        assertEquals(without.subscribe("vault", 1), 1L);
    }
}
