package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.RepoPaths;
import io.rstreams.testing.TestSubscriber;
import io.rstreams.wire.ContentTypes;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.testng.SkipException;
import org.testng.annotations.Test;

/**
 * {@link Codec#JSON} against the JavaScript package's {@code application/json} (PROTOCOL.md
 * §17.3), with Node running {@code java/src/test/resources/js/json_peer.mjs}: a Node client
 * decodes what a Java route writes by the announced type, and the Java client reads what a Node
 * server's {@code withContentType(..., "application/json")} writes, the same values both ways.
 * (The same exchange with Python is in {@link ContentMetadataInteropTest}.)
 */
public class JsonJavaScriptInteropTest {
    private static final Path PEER = RepoPaths.root().resolve("java/src/test/resources/js/json_peer.mjs");
    /** json_peer.mjs's VALUES, as JSON.stringify writes them (raw UTF-8). */
    private static final String VALUES_TEXT = "[{\"a\":[1,\"é\",null,true],\"b\":{\"c\":1.5}},\"\uD83D\uDE00 </\",-7,[]]";

    private static List<Object> values() {
        Map<String, Object> first = new LinkedHashMap<>();
        first.put("a", Arrays.asList(1L, "é", null, true));
        first.put("b", Map.of("c", 1.5));
        return List.of(first, "\uD83D\uDE00 </", -7L, List.of());
    }

    /** {@code node json_peer.mjs ARGS...}, or a skip (a failure under CI) without Node or js/node_modules. */
    private static Process node(String... args) throws IOException {
        String why = null;
        if (!Files.isDirectory(RepoPaths.root().resolve("js/node_modules"))) {
            why = "js/node_modules is missing: run `npm ci` in js/ (scripts/test.sh does)";
        }
        Process p = null;
        if (why == null) {
            List<String> command = new java.util.ArrayList<>(List.of("node", PEER.toString()));
            command.addAll(List.of(args));
            try {
                p = new ProcessBuilder(command).redirectErrorStream(true).start();
            } catch (IOException e) {
                why = "no node (Node.js 20+): " + e.getMessage();
            }
        }
        if (why != null) {
            if ("true".equalsIgnoreCase(System.getenv("CI"))) {
                throw new IllegalStateException("CI=true but " + why);
            }
            throw new SkipException(why);
        }
        return p;
    }

    @Test(timeOut = 60_000)
    public void nodeReadsTheValuesCodecJsonWrites() throws Exception {
        try (RsioServer server = RsioServer.builder()
                .route("json", Codec.JSON, r -> Counters.of(values()))
                .bind("tcp://127.0.0.1:0")) {
            Process p = node("read", server.url());
            try {
                String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                assertTrue(p.waitFor(30, TimeUnit.SECONDS), "node did not end");
                assertEquals(p.exitValue(), 0, out);
                assertEquals(out.strip(), VALUES_TEXT);
            } finally {
                p.destroyForcibly();
            }
        }
    }

    @Test(timeOut = 60_000)
    public void codecJsonReadsTheValuesNodeWrites() throws Exception {
        Process p = node("serve", "tcp://127.0.0.1:0");
        try (BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            String line = out.readLine();
            assertTrue(line != null && line.startsWith("serving on "), "node said: " + line);
            try (RsioClient client = RsioClient.builder().build();
                 RsioConnection conn = client.connect(line.substring("serving on ".length())).get(10, TimeUnit.SECONDS)) {
                RemotePublisher<Object> json = conn.publisher("values", Codec.JSON);
                TestSubscriber<Object> s = new TestSubscriber<>();
                json.subscribe(s);
                s.request(10);
                assertNull(s.awaitTerminal());
                assertEquals(s.all(), values());
                assertEquals(json.contentType().orElseThrow(), ContentTypes.JSON);
            }
        } finally {
            p.destroyForcibly();
        }
    }
}
