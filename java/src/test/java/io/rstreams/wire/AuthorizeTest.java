package io.rstreams.wire;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.BiPredicate;
import org.testng.annotations.Test;

/**
 * The authorize hook of a server that checks credentials (PROTOCOL.md §15.4), in the sans-I/O
 * connection: asked with the credentials a subscribe goes with (its own subscribeCredentials,
 * else the connection's) and the name as written; anything but true refuses that subscribe with
 * onError code 4 and the text Python and JavaScript send (tests/net/test_auth.py, js
 * auth.test.mjs), and the connection goes on. Held subscribes (sent before the authenticate
 * settled) are authorized in their turn.
 */
public class AuthorizeTest {
    private static final Set<Long> OFFERED = Set.of(FrameType.AUTH, FrameType.ERROR_CODES);

    private record Asked(String credentials, String name) {}

    /** A server connection whose authorize hook records what it is asked and answers with {@code verdict}. */
    private static final class Server {
        final List<Asked> asked = new ArrayList<>();
        final Connection conn;
        private final FrameParser parser = new FrameParser(Limits.DEFAULT);

        Server(BiPredicate<Credentials, String> verdict) {
            conn = new Connection(Connection.Side.SERVER, Limits.DEFAULT, OFFERED, c -> !"bad".equals(c.token()), (c, name) -> {
                asked.add(new Asked(c.token(), name));
                return verdict.test(c, name);
            });
            conn.dataToSend(); // the serverHello
        }

        void receive(Frame... frames) {
            for (Frame f : frames) {
                byte[] bytes = FrameWriter.encode(f, 0);
                conn.receiveData(bytes, 0, bytes.length);
            }
        }

        List<Frame> sent() throws ProtocolException {
            byte[] out = conn.dataToSend();
            parser.feed(out, 0, out.length);
            return parser.parseAll();
        }
    }

    /** The errorCode's code and the onError's text of a refusal of {@code id}. */
    private static void assertRefused(List<Frame> frames, long id, long code, String text) {
        assertEquals(frames.size(), 2, frames.toString());
        Frame.Extension qualifier = (Frame.Extension) frames.get(0);
        assertEquals(qualifier.type(), FrameType.ERROR_CODE);
        assertEquals(qualifier.payload(), Connection.errorCodePayload(id, code));
        assertEquals(frames.get(1), new Frame.OnError(id, text));
    }

    private static List<String> subscribed(Connection conn) {
        List<String> names = new ArrayList<>();
        for (Event e : conn.events()) {
            if (e instanceof Event.Subscribed s) {
                names.add(s.id() + " " + s.name());
            }
        }
        return names;
    }

    @Test(timeOut = 10_000)
    public void aRefusedSubscribeGetsCodeFourAndTheConnectionGoesOn() throws Exception {
        Server s = new Server((c, name) -> !name.startsWith("vault"));
        s.receive(AuthFrames.hello(), AuthFrames.authenticate("ann"));
        assertTrue(s.sent().get(0) instanceof Frame.Extension x && x.type() == FrameType.AUTHENTICATED);
        s.receive(new Frame.Subscribe("vault?key=x'y", 1, 1));
        assertRefused(s.sent(), 1, 4, "unauthorized: subscribe to 'vault' is not allowed for this principal (PROTOCOL.md §15.4)");
        s.receive(new Frame.Subscribe("news", 2, 1));
        assertEquals(subscribed(s.conn), List.of("2 news"));
        assertEquals(s.asked, List.of(new Asked("ann", "vault?key=x'y"), new Asked("ann", "news")), "the name as written, query included");
        assertEquals(s.conn.state(), Connection.State.OPEN);
        assertEquals(s.sent(), List.of());
    }

    @Test(timeOut = 10_000)
    public void aSubscribesOwnCredentialsAreWhatTheHookIsAskedAbout() throws Exception {
        Server s = new Server((c, name) -> "root".equals(c.token()));
        s.receive(AuthFrames.hello(), AuthFrames.authenticate("ann"));
        s.sent();
        s.receive(AuthFrames.subscribeCredentials(1, "root"), new Frame.Subscribe("admin", 1, 1), new Frame.Subscribe("admin", 2, 1));
        assertEquals(subscribed(s.conn), List.of("1 admin"));
        assertRefused(s.sent(), 2, 4, AuthGate.unauthorized("admin"));
        assertEquals(s.asked, List.of(new Asked("root", "admin"), new Asked("ann", "admin")));
        // refused own credentials are code 3, and the hook is not asked
        s.receive(AuthFrames.subscribeCredentials(3, "bad"), new Frame.Subscribe("admin", 3, 1));
        assertRefused(s.sent(), 3, 3, AuthGate.unauthenticated("admin"));
        assertEquals(s.asked.size(), 2);
    }

    @Test(timeOut = 10_000)
    public void heldSubscribesAreAuthorizedInOrderOnceTheAuthenticateIsAccepted() throws Exception {
        Server s = new Server((c, name) -> !"vault".equals(name));
        s.receive(AuthFrames.hello(), new Frame.Subscribe("news", 1, 1), new Frame.Subscribe("vault", 2, 1), new Frame.Subscribe("weather", 3, 1));
        assertEquals(s.sent(), List.of(), "held until the authenticate is settled (§15.3)");
        assertEquals(s.asked, List.of());
        s.receive(AuthFrames.authenticate("ann"));
        List<Frame> out = s.sent();
        assertTrue(out.get(0) instanceof Frame.Extension x && x.type() == FrameType.AUTHENTICATED, out.toString());
        assertRefused(out.subList(1, out.size()), 2, 4, AuthGate.unauthorized("vault"));
        assertEquals(subscribed(s.conn), List.of("1 news", "3 weather"));
    }

    @Test(timeOut = 10_000)
    public void moreSubscribeCredentialsThanMaxSubscriptionsEndTheConnection() throws Exception {
        // §15.4: the goodbye's text is rstreams' own (code 7, limit exceeded)
        Server s = new Server((c, name) -> true);
        s.receive(AuthFrames.hello(), AuthFrames.authenticate("ann"));
        s.sent();
        for (long id = 1; id <= Limits.DEFAULT.maxSubscriptions(); id++) {
            s.receive(AuthFrames.subscribeCredentials(id, "ann"));
        }
        assertEquals(s.sent(), List.of(), "as many as max_subscriptions are held");
        // at the limit, new credentials for an id already held replace them: no more are held (as rstreams)
        s.receive(AuthFrames.subscribeCredentials(1, "root"), new Frame.Subscribe("admin", 1, 1));
        assertEquals(s.sent(), List.of(), "a replacement at the limit is accepted");
        assertEquals(s.conn.state(), Connection.State.OPEN);
        assertEquals(subscribed(s.conn), List.of("1 admin"));
        assertEquals(s.asked, List.of(new Asked("root", "admin")), "the replacement is what the subscribe goes with");
        s.receive(AuthFrames.subscribeCredentials(1, "ann")); // id 1's were used: held again, max_subscriptions in all
        assertEquals(s.sent(), List.of());
        s.receive(AuthFrames.subscribeCredentials(Limits.DEFAULT.maxSubscriptions() + 1, "ann"));
        List<Frame> out = s.sent();
        assertEquals(out.get(out.size() - 1), new Frame.Goodbye("more subscribeCredentials held than max_subscriptions (PROTOCOL.md §15.4)"),
                out.toString());
    }

    @Test(timeOut = 10_000)
    public void aHookThatThrowsRefusesThatSubscribeOnly() throws Exception {
        Server s = new Server((c, name) -> {
            throw new IllegalStateException("secret " + c.token());
        });
        s.receive(AuthFrames.hello(), AuthFrames.authenticate("ann"), new Frame.Subscribe("news", 1, 1));
        List<Frame> out = s.sent();
        assertRefused(out.subList(1, out.size()), 1, 4, AuthGate.unauthorized("news"));
        assertEquals(s.conn.state(), Connection.State.OPEN);
    }

    @Test(timeOut = 10_000)
    public void anAuthorizerAloneIsAskedWithNullCredentialsAndAuthIsNotOffered() throws Exception {
        // as rstreams' serve(authorize=...) without authenticate (§15.2)
        List<String> asked = new ArrayList<>();
        Connection conn = new Connection(Connection.Side.SERVER, Limits.DEFAULT, Set.of(FrameType.ERROR_CODES), null, (c, name) -> {
            asked.add(c + " " + name);
            return !name.startsWith("vault");
        });
        FrameParser parser = new FrameParser(Limits.DEFAULT);
        byte[] hello = conn.dataToSend();
        parser.feed(hello, 0, hello.length);
        Frame.Hello serverHello = (Frame.Hello) parser.parseAll().get(0);
        assertTrue(!serverHello.extensions().contains(FrameType.AUTH), serverHello.toString());
        for (Frame f : List.of(AuthFrames.hello(), new Frame.Subscribe("vault", 1, 1), new Frame.Subscribe("news", 2, 1))) {
            byte[] bytes = FrameWriter.encode(f, 0);
            conn.receiveData(bytes, 0, bytes.length);
        }
        byte[] out = conn.dataToSend();
        parser.feed(out, 0, out.length);
        assertRefused(parser.parseAll(), 1, 4, AuthGate.unauthorized("vault"));
        assertEquals(subscribed(conn), List.of("2 news"));
        assertEquals(asked, List.of("null vault", "null news"));
        expectThrows(IllegalStateException.class, () -> conn.authRequired(false));
        IllegalArgumentException e = expectThrows(IllegalArgumentException.class,
                () -> new Connection(Connection.Side.CLIENT, Limits.DEFAULT, OFFERED, null, (c, name) -> true));
        assertTrue(e.getMessage().contains("only a server"), e.getMessage());
    }
}
