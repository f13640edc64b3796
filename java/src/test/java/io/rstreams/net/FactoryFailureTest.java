package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.PythonRstreams;
import io.rstreams.testing.RepoPaths;
import io.rstreams.testing.TestSubscriber;
import io.rstreams.wire.ErrorCode;
import java.util.List;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.Test;

/**
 * A route's factory that throws (PROTOCOL.md §19.2, code 9): the subscribe is refused with
 * {@code publisher 'PATH' could not be created: its factory failed (PROTOCOL.md §19.2)}, PATH the
 * name's path as written up to its first {@code ?} (§5.5), the exception logged, not sent; a
 * {@link RemoteStreamException} with a code is refused with its own text and code. This binding's
 * server and Python's {@code rstreams serve} (js/test/fixtures/factory_failure.py) send the same
 * bytes (so do tests/net/test_factory_failure.py and js factory-failure.test.mjs).
 */
public class FactoryFailureTest {
    private static final String SECRET = "token=hunter2";

    private static String failed(String path) {
        return "publisher '" + path + "' could not be created: its factory failed (PROTOCOL.md §19.2)";
    }

    /** Each case: name, code, text. */
    private static final List<List<Object>> CASES = List.of(
            List.of("broken", 9L, failed("broken")),
            List.of("broken/a%20b?x=1", 9L, failed("broken/a%20b")),
            List.of("broken/é?x=%C3%A9", 9L, failed("broken/é")),
            List.of("busy", 8L, "try again later"));

    private static Flow.Publisher<byte[]> broken(PublisherRequest r) {
        throw new IllegalStateException("secret detail: " + SECRET);
    }

    private static void refusals(RsioConnection conn, List<List<Object>> cases) throws Exception {
        for (List<Object> c : cases) {
            String name = (String) c.get(0);
            TestSubscriber<byte[]> sub = new TestSubscriber<>();
            conn.publisher(name).subscribe(sub);
            sub.request(1);
            Throwable error = sub.awaitTerminal();
            assertTrue(error instanceof RemoteStreamException, name + ": " + error);
            assertEquals(((RemoteStreamException) error).code().getAsLong(), (long) (Long) c.get(1), name);
            assertEquals(error.getMessage(), c.get(2), name);
            assertFalse(error.getMessage().contains(SECRET), name);
        }
    }

    @Test(timeOut = 30_000)
    public void theTextNamesThePathAsWrittenAndNothingOfTheException() {
        assertEquals(Routes.failed("broken/a%20b?x=1&y=%zz"), failed("broken/a%20b"));
        assertEquals(Routes.failed("it's"), failed("it's"));
    }

    @Test(timeOut = 30_000)
    public void thisBindingsServerRefusesAThrowingFactoryWithCode9() throws Exception {
        try (RsioServer server = RsioServer.builder()
                        .route("broken", FactoryFailureTest::broken)
                        .route("broken/{id}", FactoryFailureTest::broken)
                        .route("busy", r -> {
                            throw new RemoteStreamException("try again later", ErrorCode.UNAVAILABLE);
                        })
                        .bind("tcp://127.0.0.1:0");
                RsioClient client = RsioClient.builder().build();
                RsioConnection conn = client.connect(server.url()).get(10, TimeUnit.SECONDS)) {
            refusals(conn, CASES);
        }
    }

    @Test(timeOut = 120_000)
    public void pythonsServerRefusesTheSameNamesAlike() throws Exception {
        String offer = RepoPaths.root().resolve("js/test/fixtures/factory_failure.py").toString();
        try (PythonRstreams python = PythonRstreams.serve("--publishers", offer);
                RsioClient client = RsioClient.builder().build();
                RsioConnection conn = client.connect(python.url()).get(30, TimeUnit.SECONDS)) {
            refusals(conn, CASES);
        }
    }

    private static Flow.Publisher<byte[]> throwingAtSubscribe(RuntimeException error) {
        return subscriber -> {
            throw error;
        };
    }

    /** A publisher whose subscribe throws (rule 1.9): code 9, no exception text, as in Python and JavaScript. */
    @Test(timeOut = 30_000)
    public void aPublisherWhoseSubscribeThrowsIsRefusedWithCode9() throws Exception {
        try (RsioServer server = RsioServer.builder()
                        .route("it's", r -> throwingAtSubscribe(new IllegalStateException("secret detail: " + SECRET)))
                        .route("busy", r -> throwingAtSubscribe(new RemoteStreamException("try again later", ErrorCode.UNAVAILABLE)))
                        .bind("tcp://127.0.0.1:0");
                RsioClient client = RsioClient.builder().build();
                RsioConnection conn = client.connect(server.url()).get(10, TimeUnit.SECONDS)) {
            refusals(conn, List.of(
                    List.of("it's?q=1", 9L, "publisher 'it's' could not be subscribed to: its subscribe failed (PROTOCOL.md §19.2)"),
                    List.of("busy", 8L, "try again later")));
        }
    }
}
