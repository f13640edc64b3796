package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNotNull;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.rstreams.testing.PythonRstreams;
import io.rstreams.testing.TestSubscriber;
import io.rstreams.wire.ErrorCode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.Test;

/**
 * A publisher name's path is compared segment by segment, each percent-decoded, as RFC 3986 has it
 * (PROTOCOL.md §5.5): {@code a%20b} is the offered {@code a b} (or {@code a%20b}), {@code %2F} is a
 * {@code /} inside one segment ({@code f/a%2Fb} gives the field "a/b"; {@code f/a/b} has one
 * segment more), and a segment that is not percent-encoded UTF-8 makes a name that matches
 * malformed: refused with code 1 naming the segment as written. The same names and answers from
 * this binding's server and from Python's (tests/net/test_name_paths.py, js name-paths.test.mjs).
 */
public class NamePathsTest {
    private static final String[][] FOUND = {
        {"a%20b", "exact a b"}, {"a b", "exact a b"}, {"%61%20%62", "exact a b"}, {"x%2Fy", "exact x%2Fy"},
        {"x%2fy", "exact x%2Fy"}, {"100%25", "exact 100%25"}, {"f/a%2Fb", "x=a/b"}, {"f/a%20b", "x=a b"},
        {"f/%25", "x=%"}, {"f/k%C3%BCche", "x=küche"},
    };
    private static final String[] UNKNOWN = {"x/y", "f/a/b", "f/", "a%2520b", "nope/%zz", "a%zz"};
    private static final String[][] MALFORMED = {
        {"f/%zz", "%zz"}, {"f/%FF", "%FF"}, {"f/a%2", "a%2"}, {"100%", "100%"}, {"f/%zz?y=%zz", "%zz"},
    };

    /** The offer of these tests, the same as tests/net/test_name_paths.py's. */
    private static final String OFFER_PY = """
            import rstreams

            def _field(params):
                return rstreams.just(f"x={params['x']}".encode())

            PUBLISHERS = {
                "a b": rstreams.just(b"exact a b"),
                "x%2Fy": rstreams.just(b"exact x%2Fy"),
                "100%25": rstreams.just(b"exact 100%25"),
                "f/{x}": _field,
            }
            """;

    private static String segment(String part) {
        return "has the path segment '" + part + "', which is not percent-encoded UTF-8";
    }

    private static Routes routes() {
        Routes routes = new Routes();
        for (String name : List.of("a b", "x%2Fy", "100%25", "f/{x}")) {
            routes.add(new Routes.Route(name, 0, r -> null));
        }
        return routes;
    }

    @Test(timeOut = 30_000)
    public void segmentsAreComparedDecodedAndAMalformedOneIsTheFault() {
        Routes routes = routes();
        for (String[] c : FOUND) {
            Routes.Match match = routes.resolve(c[0], null);
            assertNotNull(match, c[0]);
            assertNull(match.fault(), c[0]);
        }
        Routes.Match field = routes.resolve("f/a%2Fb?n=1", null);
        assertEquals(field.request().params(), Map.of("n", "1", "x", "a/b"));
        assertEquals(field.request().path(), "f/a%2Fb"); // the path as written
        for (String name : UNKNOWN) {
            assertNull(routes.resolve(name, null), name);
        }
        for (String[] c : MALFORMED) {
            assertEquals(routes.resolve(c[0], null).fault(), segment(c[1]), c[0]);
        }
        for (String name : List.of("100%", "a/%zz", "{x}/%E9")) {
            IllegalArgumentException e = expectThrows(IllegalArgumentException.class,
                    () -> new Routes().add(new Routes.Route(name, 0, r -> null)));
            assertTrue(e.getMessage().matches(".*cannot be offered: its path segment .* \\(write '%' as %25, PROTOCOL\\.md §5\\.5\\)"),
                    e.getMessage());
        }
    }

    @Test(timeOut = 30_000)
    public void aRestFieldJoinsDecodedSegments() {
        Routes routes = new Routes();
        routes.add(new Routes.Route("files/{path...}", 0, r -> null));
        assertEquals(routes.resolve("files/a%2Fb/c%20d", null).request().params(), Map.of("path", "a/b/c d"));
    }

    private static void cases(RsioConnection conn) throws Exception {
        for (String[] c : FOUND) {
            TestSubscriber<String> sub = new TestSubscriber<>();
            conn.publisher(c[0], Codec.UTF8).subscribe(sub);
            sub.request(1);
            assertEquals(sub.take(1), List.of(c[1]), c[0]);
        }
        for (String name : UNKNOWN) {
            TestSubscriber<String> sub = new TestSubscriber<>();
            conn.publisher(name, Codec.UTF8).subscribe(sub);
            Throwable error = sub.awaitTerminal();
            assertTrue(error instanceof RemoteStreamException, name + ": " + error);
            assertEquals(((RemoteStreamException) error).code().getAsLong(), ErrorCode.UNKNOWN_PUBLISHER.value(), name);
        }
        for (String[] c : MALFORMED) {
            TestSubscriber<String> sub = new TestSubscriber<>();
            conn.publisher(c[0], Codec.UTF8).subscribe(sub);
            Throwable error = sub.awaitTerminal();
            assertTrue(error instanceof RemoteStreamException, String.valueOf(error));
            assertEquals(error.getMessage(), "publisher name '" + c[0] + "' " + segment(c[1]) + " (PROTOCOL.md §5.5)");
            assertEquals(((RemoteStreamException) error).code().getAsLong(), ErrorCode.APPLICATION.value());
        }
    }

    @Test(timeOut = 30_000)
    public void thisBindingsServerMatchesDecodedSegments() throws Exception {
        try (RsioServer server = RsioServer.builder()
                        .route("a b", Codec.UTF8, r -> Counters.repeat("exact a b", 1))
                        .route("x%2Fy", Codec.UTF8, r -> Counters.repeat("exact x%2Fy", 1))
                        .route("100%25", Codec.UTF8, r -> Counters.repeat("exact 100%25", 1))
                        .route("f/{x}", Codec.UTF8, r -> Counters.repeat("x=" + r.params().get("x"), 1))
                        .bind("tcp://127.0.0.1:0");
                RsioClient client = RsioClient.builder().build();
                RsioConnection conn = client.connect(server.url()).get(10, TimeUnit.SECONDS)) {
            cases(conn);
        }
    }

    @Test(timeOut = 120_000)
    public void pythonsServerMatchesTheSameNamesWithTheSameAnswers() throws Exception {
        Path dir = Files.createTempDirectory("name-paths");
        Path offer = Files.writeString(dir.resolve("name_paths.py"), OFFER_PY, StandardCharsets.UTF_8);
        try (PythonRstreams python = PythonRstreams.serve("--publishers", offer.toString());
                RsioClient client = RsioClient.builder().build();
                RsioConnection conn = client.connect(python.url()).get(30, TimeUnit.SECONDS)) {
            cases(conn);
        } finally {
            Files.deleteIfExists(offer);
            Files.deleteIfExists(dir);
        }
    }
}
