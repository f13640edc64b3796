package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNull;

import org.testng.annotations.Test;

/**
 * A publisher name's query read as RFC 3986 says (PROTOCOL.md §5.5). What a subscribe gives for
 * each name is in docs/protocol-vectors.json's {@code names} (NamePathsTest); here: a match names
 * the first key given more than once ({@link Routes.Match#repeated()}).
 */
public class NameQueryTest {
    private static Routes.Match resolve(String name) {
        Routes routes = new Routes();
        routes.add(new Routes.Route("n", 0, r -> null));
        return routes.resolve(name, null);
    }

    @Test(timeOut = 30_000)
    public void aRepeatedKeyIsNamed() {
        assertNull(resolve("n?x=1&y").repeated());
        assertEquals(resolve("n?to=3&to=4").repeated(), "to");
        assertEquals(resolve("n?to=3&t%6F=4").repeated(), "to");
        assertEquals(resolve("n?to&to").repeated(), "to");
        assertEquals(resolve("n?to=%zz&x=1&x=2&to=1").repeated(), "x");
    }
}
