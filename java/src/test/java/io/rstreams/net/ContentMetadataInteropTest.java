package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.PythonRstreams;
import io.rstreams.testing.RepoPaths;
import io.rstreams.testing.TestSubscriber;
import io.rstreams.wire.ContentTypes;
import io.rstreams.wire.SubscribeMetadata;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.Test;

/**
 * Extensions content-types (PROTOCOL.md §17) and metadata (§18) with real Python processes, both
 * ways: the Java client against {@code rstreams serve --publishers content_offer.py:PUBLISHERS}
 * (the announced types, §17.2's refusal of a contradicting codec, metadata seen by a callable
 * offer through {@code subscribe_metadata()}), and a Python client against the Java server
 * (decoding by the announced type, {@code ContentTypeError}, metadata seen by a route's factory).
 */
public class ContentMetadataInteropTest {

    private static <T> TestSubscriber<T> read(RemotePublisher<T> publisher, long n) throws Exception {
        TestSubscriber<T> s = new TestSubscriber<>();
        publisher.subscribe(s);
        s.request(n);
        return s;
    }

    @Test(timeOut = 90_000)
    public void theJavaClientReadsAPythonServersTypesAndSendsItMetadata() throws Exception {
        String offer = RepoPaths.root().resolve("java/src/test/resources/python/content_offer.py") + ":PUBLISHERS";
        try (PythonRstreams server = PythonRstreams.serve("--publishers", offer);
             RsioClient client = RsioClient.builder().build();
             RsioConnection conn = client.connect(server.url()).get(10, TimeUnit.SECONDS)) {
            RemotePublisher<byte[]> json = conn.publisher("json");
            TestSubscriber<byte[]> j = read(json, 5);
            assertNull(j.awaitTerminal());
            assertEquals(new String(j.all().get(0), StandardCharsets.UTF_8), "{\"a\":[1,\"\\u00e9\"]}"); // §17.3, byte for byte
            assertEquals(json.contentType().orElseThrow(), ContentTypes.JSON);

            TestSubscriber<Object> values = read(conn.publisher("values", Codec.JSON), 10);
            assertNull(values.awaitTerminal());
            assertEquals(values.all(), jsonValues(), "content_offer.py's VALUES, read by Codec.JSON");

            RemotePublisher<String> words = conn.publisher("words", Codec.UTF8);
            TestSubscriber<String> w = read(words, 5);
            assertNull(w.awaitTerminal());
            assertEquals(w.all(), List.of("hé", "hé"));
            assertEquals(words.contentType().orElseThrow(), ContentTypes.TEXT_UTF8);

            RemotePublisher<Long> longs = conn.publisher("longs", Codec.INT64);
            TestSubscriber<Long> l = read(longs, 5);
            assertNull(l.awaitTerminal());
            assertEquals(l.all(), List.of(0L, 1L, 2L));
            assertEquals(longs.contentType().orElseThrow(), ContentTypes.INT64_LE);

            RemotePublisher<byte[]> raw = conn.publisher("raw");
            assertNull(read(raw, 5).awaitTerminal());
            assertTrue(raw.contentType().isEmpty(), "a publisher served without a codec states nothing (§17.4)");

            Throwable wrong = read(conn.publisher("json", Codec.UTF8), 5).awaitTerminal();
            assertTrue(wrong instanceof ContentTypeException, String.valueOf(wrong));
            assertEquals(((ContentTypeException) wrong).announced(), ContentTypes.JSON);

            TestSubscriber<String> echo = read(conn.publisher("echo", Codec.UTF8,
                    SubscribeMetadata.of(Map.of("x-tenant", "acme", "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))), 5);
            assertNull(echo.awaitTerminal());
            assertEquals(echo.all(), List.of("traceparent=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01,x-tenant=acme"));
            assertTrue(conn.activeExtensions().containsAll(List.of(4L, 5L)), conn.activeExtensions().toString());
        }
    }

    /** content_offer.py's VALUES as Java's values; the Java server serves them as "json". */
    private static List<Object> jsonValues() {
        Map<String, Object> first = new java.util.LinkedHashMap<>();
        first.put("a", java.util.Arrays.asList(1L, "é", null, true));
        first.put("b", Map.of("c", 1.5));
        return List.of(first, "\uD83D\uDE00 </", new java.math.BigInteger("12345678901234567890123"), -7L, List.of());
    }

    /** What the Python client sees: one line per case. */
    private static final String PYTHON_CLIENT = String.join("\n",
            "import asyncio, sys",
            "import rstreams",
            "import json",
            "from rstreams.net import INT64, RAW, ContentTypeError",
            "async def elements(conn, name, **options):",
            "    return [x async for x in conn.publisher(name, **options)]",
            "async def main(url):",
            "    conn = await rstreams.connect(url, keepalive=None)",
            "    try:",
            "        print('words', repr(await elements(conn, 'words')), flush=True)",
            "        print('longs', repr(await elements(conn, 'longs')), flush=True)",
            "        print('raw', repr(await elements(conn, 'raw')), flush=True)",
            "        values = await elements(conn, 'json')",
            "        print('json', ascii(values), flush=True)",
            "        same = [json.dumps(v, separators=(',', ':')).encode() for v in values] == await elements(conn, 'json', codec=RAW)",
            "        print('json bytes', 'as json.dumps' if same else 'differ', flush=True)",
            "        try:",
            "            await elements(conn, 'words', codec=INT64)",
            "            print('mismatch none', flush=True)",
            "        except ContentTypeError as error:",
            "            print('mismatch', error.announced, flush=True)",
            "        print('echo', repr(await elements(conn, 'echo', metadata={'x-tenant': 'acme', 'x-bytes': b'\\x01'})), flush=True)",
            "    finally:",
            "        await conn.aclose()",
            "asyncio.run(main(sys.argv[1]))");

    @Test(timeOut = 90_000)
    public void aPythonClientDecodesByTheJavaServersTypesAndSendsItMetadata() throws Exception {
        try (RsioServer server = RsioServer.builder()
                .route("words", Codec.UTF8, r -> Counters.repeat("hé", 2))
                .route("longs", Codec.INT64, r -> Counters.range(0, 3))
                .route("raw", r -> Counters.repeat(new byte[] {1, 2}, 1))
                .route("json", Codec.JSON, r -> Counters.of(jsonValues()))
                .route("echo", Codec.UTF8, r -> Counters.repeat(new TreeMap<>(r.metadata().texts()).toString(), 1))
                .bind("tcp://127.0.0.1:0")) {
            PythonRstreams.Result run = PythonRstreams.run(60, "-c", PYTHON_CLIENT, server.url());
            assertEquals(run.status(), 0, run.output());
            List<String> lines = run.output().lines().filter(l -> l.matches("(words|longs|raw|json|mismatch|echo) .*")).toList();
            assertEquals(lines, List.of(
                    "words ['hé', 'hé']",
                    "longs [0, 1, 2]",
                    "raw [b'\\x01\\x02']",
                    "json [{'a': [1, '\\xe9', None, True], 'b': {'c': 1.5}}, '\\U0001f600 </', 12345678901234567890123, -7, []]",
                    "json bytes as json.dumps",
                    "mismatch text/plain; charset=utf-8",
                    "echo ['{x-bytes=\\x01, x-tenant=acme}']"), run.output());
        }
    }
}
