package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNotNull;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.rstreams.testing.Json;
import io.rstreams.testing.PythonRstreams;
import io.rstreams.testing.RepoPaths;
import io.rstreams.testing.TestSubscriber;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.Test;

/**
 * Publisher names as docs/protocol-vectors.json's {@code names} has them (PROTOCOL.md §5.5): a path
 * is compared segment by segment, each percent-decoded ({@code %2F} a {@code /} inside its segment),
 * the query split on {@code &} and the first {@code =} and decoded, exact names before patterns; a
 * name that matches and is malformed is refused with code 1 naming the fault, one that matches
 * nothing with code 2 and {@code no publisher named 'PATH'}. This binding's routes, its server and
 * Python's {@code rstreams serve} answer every case as the vectors say (so do
 * tests/net/test_name_paths.py and js name-paths.test.mjs).
 */
public class NamePathsTest {
    private static final Map<String, Object> NAMES = names();

    @SuppressWarnings("unchecked")
    private static Map<String, Object> names() {
        try {
            String text = Files.readString(RepoPaths.root().resolve("docs/protocol-vectors.json"), StandardCharsets.UTF_8);
            return (Map<String, Object>) ((Map<String, Object>) Json.parse(text)).get("names");
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    @SuppressWarnings("unchecked")
    private static List<String> offered() {
        return (List<String>) NAMES.get("offered");
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> cases() {
        return (List<Map<String, Object>>) NAMES.get("cases");
    }

    private static long code(Map<String, Object> c) {
        return ((Number) c.get("code")).longValue();
    }

    /** What the offered {@code entry} answers: {@code {"offer": ENTRY, "params": PARAMS}} as JSON. */
    private static String answer(String entry, Map<String, String> params) {
        StringBuilder out = new StringBuilder("{\"offer\": ").append(Json.quote(entry)).append(", \"params\": {");
        String comma = "";
        for (Map.Entry<String, String> e : new TreeMap<>(params).entrySet()) {
            out.append(comma).append(Json.quote(e.getKey())).append(": ").append(Json.quote(e.getValue()));
            comma = ", ";
        }
        return out.append("}}").toString();
    }

    @Test(timeOut = 30_000)
    public void everyCaseAsTheseRoutesMatchIt() {
        Routes routes = new Routes();
        for (String entry : offered()) {
            routes.add(new Routes.Route(entry, 0, r -> null));
        }
        for (Map<String, Object> c : cases()) {
            String name = (String) c.get("name");
            Routes.Match match = routes.resolve(name, null);
            switch ((String) c.get("outcome")) {
                case "unknown" -> {
                    assertNull(match, name);
                    assertEquals(Routes.unknown(name), c.get("error"), name);
                }
                case "malformed" -> {
                    assertNotNull(match, name);
                    assertEquals("publisher name '" + name + "' " + match.fault() + " (PROTOCOL.md §5.5)", c.get("error"), name);
                }
                default -> {
                    assertNotNull(match, name);
                    assertNull(match.fault(), name);
                    assertEquals(match.route().pattern(), c.get("offer"), name);
                    assertEquals(match.request().params(), c.get("params"), name);
                    assertEquals(match.request().path(), name.split("\\?", 2)[0], name); // the path as written
                }
            }
        }
        @SuppressWarnings("unchecked")
        List<String> never = (List<String>) NAMES.get("not_offerable");
        for (String name : never) {
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
        for (Map<String, Object> c : cases()) {
            String name = (String) c.get("name");
            TestSubscriber<String> sub = new TestSubscriber<>();
            conn.publisher(name, Codec.UTF8).subscribe(sub);
            if ("found".equals(c.get("outcome"))) {
                sub.request(1);
                assertEquals(Json.parse(sub.take(1).get(0)), Map.of("offer", c.get("offer"), "params", c.get("params")), name);
                continue;
            }
            Throwable error = sub.awaitTerminal();
            assertTrue(error instanceof RemoteStreamException, name + ": " + error);
            assertEquals(((RemoteStreamException) error).code().getAsLong(), code(c), name);
            assertEquals(error.getMessage(), c.get("error"), name);
        }
    }

    @Test(timeOut = 30_000)
    public void thisBindingsServerAnswersEveryCase() throws Exception {
        RsioServer.Builder builder = RsioServer.builder();
        for (String entry : offered()) {
            builder.route(entry, Codec.UTF8, r -> Counters.repeat(answer(entry, r.params()), 1));
        }
        try (RsioServer server = builder.bind("tcp://127.0.0.1:0");
                RsioClient client = RsioClient.builder().build();
                RsioConnection conn = client.connect(server.url()).get(10, TimeUnit.SECONDS)) {
            cases(conn);
        }
    }

    @Test(timeOut = 120_000)
    public void pythonsServerAnswersEveryCaseAlike() throws Exception {
        String offer = RepoPaths.root().resolve("js/test/fixtures/name_paths.py").toString(); // the vectors' offer
        try (PythonRstreams python = PythonRstreams.serve("--publishers", offer);
                RsioClient client = RsioClient.builder().build();
                RsioConnection conn = client.connect(python.url()).get(30, TimeUnit.SECONDS)) {
            cases(conn);
        }
    }
}
