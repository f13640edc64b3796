package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.TestSubscriber;
import io.rstreams.wire.ErrorCode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.Test;

/**
 * A publisher name whose path segment or query part is not percent-encoded UTF-8 is malformed, as
 * RFC 3986 §2.1 has it (PROTOCOL.md §5.5). What a subscribe gives for each such name is in
 * docs/protocol-vectors.json's {@code names} (NamePathsTest); here: the factory of a name that
 * matches is not called for one.
 */
public class NameEscapesTest {
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
            for (String name : List.of("echo/1?x=%zz", "echo/1?x=1&%=2", "echo/1?x=%FF", "echo/%zz", "echo/1?x&x")) {
                TestSubscriber<String> sub = new TestSubscriber<>();
                conn.publisher(name, Codec.UTF8).subscribe(sub);
                Throwable error = sub.awaitTerminal();
                assertTrue(error instanceof RemoteStreamException, name + ": " + error);
                assertEquals(((RemoteStreamException) error).code().getAsLong(), ErrorCode.APPLICATION.value(), name);
            }
            assertEquals(called, List.of());
            TestSubscriber<String> ok = new TestSubscriber<>();
            conn.publisher("echo/1?x=%41", Codec.UTF8).subscribe(ok);
            ok.request(1);
            assertEquals(ok.take(1), List.of("x"));
            assertEquals(called, List.of(Map.of("x", "A", "id", "1")));
        }
    }
}
