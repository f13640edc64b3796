package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.TestSubscriber;
import io.rstreams.wire.ErrorCode;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.Test;

/**
 * A publisher name's query read as RFC 3986 says (PROTOCOL.md §5.5): {@code +} is a plus, each
 * part percent-decoded, and a subscribe whose name gives a key twice is refused naming the key.
 */
public class NameQueryTest {
    private static Routes.Match resolve(String name) {
        Routes routes = new Routes();
        routes.add(new Routes.Route("n", 0, r -> null));
        return routes.resolve(name, null);
    }

    @Test(timeOut = 30_000)
    public void plusStaysAPlusAndEachPartIsPercentDecoded() {
        assertEquals(resolve("n?q=a+b").request().params(), Map.of("q", "a+b"));
        assertEquals(resolve("n?q=a%2Bb").request().params(), Map.of("q", "a+b"));
        assertEquals(resolve("n?q=a%20b").request().params(), Map.of("q", "a b"));
        assertEquals(resolve("n?q=&flag").request().params(), Map.of("q", "", "flag", ""));
        assertEquals(resolve("n?&x=1&&y=2&").request().params(), Map.of("x", "1", "y", "2"));
        assertEquals(resolve("n?q=a=b&a%26b=c%3Dd").request().params(), Map.of("q", "a=b", "a&b", "c=d"));
        assertNull(resolve("n?x=1&y").repeated());
    }

    @Test(timeOut = 30_000)
    public void aRepeatedKeyIsNamed() {
        assertEquals(resolve("n?to=3&to=4").repeated(), "to");
        assertEquals(resolve("n?to=3&t%6F=4").repeated(), "to");
        assertEquals(resolve("n?to&to").repeated(), "to");
    }

    @Test(timeOut = 30_000)
    public void aKeyGivenTwiceIsThatSubscribesErrorWithCodeOne() throws Exception {
        try (RsioServer server = RsioServer.builder()
                        .route("echo", Codec.UTF8, r -> Counters.repeat(r.param("q", "?") + "|" + r.param("s", "?"), 1))
                        .bind("tcp://127.0.0.1:0");
                RsioClient client = RsioClient.builder().build();
                RsioConnection conn = client.connect(server.url()).get(10, TimeUnit.SECONDS)) {
            TestSubscriber<String> plus = new TestSubscriber<>();
            conn.publisher("echo?q=1+1&s=%20", Codec.UTF8).subscribe(plus);
            plus.request(1);
            assertEquals(plus.take(1), List.of("1+1| "));
            assertNull(plus.awaitTerminal());

            TestSubscriber<String> twice = new TestSubscriber<>();
            conn.publisher("echo?to=3&to=4", Codec.UTF8).subscribe(twice);
            Throwable error = twice.awaitTerminal();
            assertTrue(error instanceof RemoteStreamException, String.valueOf(error));
            assertEquals(error.getMessage(), "publisher name 'echo?to=3&to=4' gives the parameter 'to' more than once (PROTOCOL.md §5.5)");
            assertEquals(((RemoteStreamException) error).code().getAsLong(), ErrorCode.APPLICATION.value());
        }
    }
}
