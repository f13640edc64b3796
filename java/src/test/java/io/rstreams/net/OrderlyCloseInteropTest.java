package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.PythonRstreams;
import io.rstreams.testing.TestSubscriber;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.Test;

/**
 * The orderly close (PROTOCOL.md §9.1) between the Java binding and real Python processes: the
 * Java end that said goodbye reads on, dropping the elements still in flight, until the Python
 * end's answer; the Python end that is said goodbye by a Java server ends with the goodbye's
 * reason and code 0 (§19.2). The wait's bounds are checked on a virtual clock in
 * {@link CloseTimeoutTest}; here both ends only have to finish.
 */
public class OrderlyCloseInteropTest {
    @Test(timeOut = 120_000)
    public void theJavaClientClosesWhileAPythonServerStreamsAndBothEndCleanly() throws Exception {
        for (String where : new String[] {"tcp://127.0.0.1:0", "ws://127.0.0.1:0/rsio"}) {
            try (PythonRstreams python = PythonRstreams.serveAt(where);
                    RsioClient client = RsioClient.builder().build()) {
                RsioConnection conn = client.connect(python.url()).get(20, TimeUnit.SECONDS);
                TestSubscriber<String> sub = new TestSubscriber<>();
                CompletableFuture<Integer> seenAtError = new CompletableFuture<>();
                sub.terminated.whenComplete((error, e) -> seenAtError.complete(sub.all().size())); // on the I/O thread, in onError
                conn.publisher("counter", Codec.UTF8).subscribe(sub);
                sub.request(Long.MAX_VALUE); // the server writes as fast as it can: elements are in flight at the goodbye
                sub.take(100);
                conn.closeAsync().get(20, TimeUnit.SECONDS);
                Throwable error = sub.awaitTerminal();
                assertTrue(error instanceof ConnectionClosedException && error.getMessage().contains("closed by this end"),
                        where + ": " + error);
                assertEquals(sub.all().size(), (int) seenAtError.get(), where + ": an element after onError");
                assertFalse(conn.isOpen(), where);
                try (RsioConnection again = client.connect(python.url()).get(20, TimeUnit.SECONDS)) {
                    TestSubscriber<String> next = new TestSubscriber<>();
                    again.publisher("counter?to=3", Codec.UTF8).subscribe(next);
                    next.request(10);
                    assertEquals(next.take(3), List.of("0", "1", "2"), where + ": the server still serves");
                    assertNull(next.awaitTerminal());
                }
                assertFalse(python.output().contains("Traceback"), python.output());
            }
        }
    }

    @Test(timeOut = 120_000)
    public void aPythonClientSaidGoodbyeByAJavaServerEndsWithItsReasonAndCodeZero() throws Exception {
        CompletableFuture<Void> subscribed = new CompletableFuture<>();
        RsioServer server = RsioServer.builder()
                .route("silent", r -> {
                    subscribed.complete(null);
                    return Counters.silent();
                })
                .bind("tcp://127.0.0.1:0");
        try {
            CompletableFuture<PythonRstreams.Result> run = CompletableFuture.supplyAsync(() -> {
                try {
                    return PythonRstreams.request(60, server.url(), "silent"); // a route that never answers
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            subscribed.get(60, TimeUnit.SECONDS);
            server.close(); // goodbye "server closing", code 0, then the Python client's answer ends the wait
            PythonRstreams.Result result = run.get(70, TimeUnit.SECONDS);
            assertEquals(result.status(), 0, result.output());
            String[] words = result.output().trim().split(" ", 3);
            assertEquals(words.length, 3, result.output());
            assertEquals(words[1], "0", result.output()); // §19.2: normal
            assertTrue(words[2].contains("server closing"), result.output());
        } finally {
            server.close();
        }
    }
}
