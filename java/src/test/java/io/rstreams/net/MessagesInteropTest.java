package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.PythonRstreams;
import io.rstreams.testing.RepoPaths;
import io.rstreams.testing.TestSubscriber;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.testng.annotations.Test;

/**
 * Extension messages (PROTOCOL.md §20) with real Python processes, both ways: the Java client
 * sends to a Python server's handler and handles its answer; a Python client sends to the Java
 * server's handler and handles its answer; each sender outruns the receiver's credit and waits.
 */
public class MessagesInteropTest {
    private static final Path SCRIPTS = RepoPaths.root().resolve("java/src/test/resources/python");

    @Test(timeOut = 120_000)
    public void theJavaClientSendsToAPythonHandlerAndHandlesItsAnswer() throws Exception {
        PythonRstreams.python();
        BlockingQueue<Message> answers = new LinkedBlockingQueue<>();
        try (PythonRstreams server = PythonRstreams.script(SCRIPTS.resolve("messages_server.py"), "tcp://127.0.0.1:0");
                RsioClient client = RsioClient.builder().handler("from-python/{kind}", answers::add).build();
                RsioConnection conn = client.connect(server.url()).get(20, TimeUnit.SECONDS)) {
            conn.send("to-python/click?x=1", "hi").toCompletableFuture().get(20, TimeUnit.SECONDS);
            Message answer = answers.poll(20, TimeUnit.SECONDS);
            assertTrue(answer != null, "no answer from the Python handler:\n" + server.output());
            assertEquals(answer.name(), "from-python/click?x=1");
            assertEquals(answer.params(), Map.of("kind", "click", "x", "1"));
            assertEquals(answer.text(), "HI");

            // 200 messages on the Python server's credit of 16, its handler slow: the sends wait, none beyond the credit
            List<CompletableFuture<Void>> sends = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                sends.add(conn.send("count", Integer.toString(i)).toCompletableFuture());
            }
            CompletableFuture.allOf(sends.toArray(CompletableFuture<?>[]::new)).get(60, TimeUnit.SECONDS);
            assertTrue(conn.isOpen(), "the Python server ended the connection:\n" + server.output());
            String counted = "";
            for (int round = 0; round < 200 && !counted.equals("200"); round++) { // its last handlers may still run
                TestSubscriber<String> sub = new TestSubscriber<>();
                conn.publisher("counted", Codec.UTF8).subscribe(sub);
                sub.request(1);
                counted = sub.take(1).get(0);
            }
            assertEquals(counted, "200", "messages the Python handler counted:\n" + server.output());
        }
    }

    @Test(timeOut = 120_000)
    public void aPythonClientSendsToAJavaHandlerAndHandlesItsAnswer() throws Exception {
        PythonRstreams.python();
        AtomicInteger counted = new AtomicInteger();
        BlockingQueue<Message> got = new LinkedBlockingQueue<>();
        try (RsioServer server = RsioServer.builder()
                .maxMessagesInFlight(4)
                .handler("to-java/{kind}", m -> {
                    got.add(m);
                    m.connection().send("from-java/" + m.param("kind", "?"), m.text().toUpperCase());
                })
                .asyncHandler("count", m -> CompletableFuture.runAsync(counted::incrementAndGet,
                        CompletableFuture.delayedExecutor(1, TimeUnit.MILLISECONDS)))
                .bind("tcp://127.0.0.1:0")) {
            PythonRstreams.Result result = PythonRstreams.run(100, SCRIPTS.resolve("messages_client.py").toString(), server.url());
            assertEquals(result.status(), 0, result.output());
            assertTrue(result.output().contains("reply from-java/click HI click"), result.output());
            assertTrue(result.output().contains("sent 100"), result.output());
            Message m = got.poll(20, TimeUnit.SECONDS);
            assertEquals(m.name(), "to-java/click?x=7");
            assertEquals(m.params(), Map.of("kind", "click", "x", "7"));
            assertEquals(m.text(), "hi");
        }
        assertTrue(counted.get() <= 100 && counted.get() >= 96, "counted " + counted.get() + " (up to the credit of 4 may be cut by the close)");
    }
}
