package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.PythonRstreams;
import io.rstreams.testing.TestSubscriber;
import io.rstreams.wire.ErrorCode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.Test;

/**
 * A publisher name whose query has a part that is not percent-encoded UTF-8 ({@code %},
 * {@code %2}, {@code %zz}, escapes decoding to no UTF-8) is malformed, as RFC 3986 §2.1 has it
 * (PROTOCOL.md §5.5): a subscribe whose name matches is refused (code 1) naming the part as
 * written, an unknown name stays unknown (code 2); the same text from this binding's server and
 * from Python's.
 */
public class NameEscapesTest {
    private static Routes.Match resolve(String name) {
        Routes routes = new Routes();
        routes.add(new Routes.Route("n", 0, r -> null));
        return routes.resolve(name, null);
    }

    private static String notUtf8(String part) {
        return "has the query part '" + part + "', which is not percent-encoded UTF-8";
    }

    @Test(timeOut = 30_000)
    public void theFirstPartThatIsNotPercentEncodedUtf8IsTheFault() {
        String[][] cases = {
            {"q=%", "%"}, {"q=%2", "%2"}, {"q=%zz", "%zz"}, {"q=a%2", "a%2"}, {"q=%FF", "%FF"}, {"q=%C3", "%C3"},
            {"q=%C3x%A9", "%C3x%A9"}, {"q=%C0%80", "%C0%80"}, {"q=%ED%A0%80", "%ED%A0%80"},
            {"q=%F4%90%80%80", "%F4%90%80%80"}, {"%zz=1", "%zz"}, {"%=1&q=%zz", "%"}, {"q=%zz&q=1", "%zz"},
            {"q=%\uff21\uff21", "%\uff21\uff21"}, // fullwidth letters are no hex digits
        };
        for (String[] c : cases) {
            assertEquals(resolve("n?" + c[0]).fault(), notUtf8(c[1]), c[0]);
        }
        assertEquals(resolve("n?q=%zz").request().params(), Map.of("q", "%zz"));
        assertEquals(resolve("n?to=1&to=%zz").fault(), "gives the parameter 'to' more than once");
        String[][] good = {{"q=%C3%A9", "é"}, {"q=%e2%82%ac", "€"}, {"q=%F0%9F%98%80", "\uD83D\uDE00"},
            {"q=100%25", "100%"}, {"q=é", "é"}, {"q=a%2Bb+c", "a+b+c"}};
        for (String[] c : good) {
            Routes.Match match = resolve("n?" + c[0]);
            assertNull(match.fault(), c[0]);
            assertEquals(match.request().params(), Map.of("q", c[1]), c[0]);
        }
    }

    private static void refusals(RsioConnection conn, String known, String unknown) throws Exception {
        String[][] cases = {{"x=%zz", "%zz"}, {"x=1&%=2", "%"}, {"x=%FF", "%FF"}};
        for (String[] c : cases) {
            String name = known + "?" + c[0];
            TestSubscriber<String> sub = new TestSubscriber<>();
            conn.publisher(name, Codec.UTF8).subscribe(sub);
            Throwable error = sub.awaitTerminal();
            assertTrue(error instanceof RemoteStreamException, String.valueOf(error));
            assertEquals(error.getMessage(), "publisher name '" + name + "' " + notUtf8(c[1]) + " (PROTOCOL.md §5.5)");
            assertEquals(((RemoteStreamException) error).code().getAsLong(), ErrorCode.APPLICATION.value());
        }
        TestSubscriber<String> sub = new TestSubscriber<>();
        conn.publisher(unknown + "?x=%zz", Codec.UTF8).subscribe(sub);
        Throwable error = sub.awaitTerminal();
        assertTrue(error instanceof RemoteStreamException, String.valueOf(error));
        assertEquals(((RemoteStreamException) error).code().getAsLong(), ErrorCode.UNKNOWN_PUBLISHER.value());
    }

    @Test(timeOut = 30_000)
    public void aMalformedNameIsRefusedWithCodeOneAndItsFactoryIsNotCalled() throws Exception {
        List<Map<String, String>> called = new ArrayList<>();
        try (RsioServer server = RsioServer.builder()
                        .route("echo/{id}", Codec.UTF8, r -> {
                            called.add(r.params());
                            return Counters.repeat("x", 1);
                        })
                        .bind("tcp://127.0.0.1:0");
                RsioClient client = RsioClient.builder().build();
                RsioConnection conn = client.connect(server.url()).get(10, TimeUnit.SECONDS)) {
            refusals(conn, "echo/1", "nope");
            assertEquals(called, List.of());
            TestSubscriber<String> ok = new TestSubscriber<>();
            conn.publisher("echo/1?x=%41", Codec.UTF8).subscribe(ok);
            ok.request(1);
            assertEquals(ok.take(1), List.of("x"));
            assertEquals(called, List.of(Map.of("x", "A", "id", "1")));
        }
    }

    @Test(timeOut = 120_000)
    public void pythonsServerRefusesAMalformedNameWithTheSameCodeAndText() throws Exception {
        try (PythonRstreams python = PythonRstreams.serve();
                RsioClient client = RsioClient.builder().build();
                RsioConnection conn = client.connect(python.url()).get(30, TimeUnit.SECONDS)) {
            refusals(conn, "counter", "nope");
        }
    }
}
