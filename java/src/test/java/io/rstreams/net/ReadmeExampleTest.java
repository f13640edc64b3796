package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.PythonRstreams;
import io.rstreams.testing.RepoPaths;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/**
 * The README's Java client, as written there, against {@code rstreams serve}: the lines between
 * the markers below are the README's (its URL aside), and they read the whole counter.
 */
public class ReadmeExampleTest {
    private static final String README_URL = "\"tcp://127.0.0.1:9000\"";
    private PythonRstreams server;

    /** A subscriber a reader of the README would write: it asks for one element at a time. */
    static final class MySubscriber implements Flow.Subscriber<String> {
        final CompletableFuture<Void> done = new CompletableFuture<>();
        final List<String> received = new ArrayList<>();
        private Flow.Subscription subscription;

        @Override
        public void onSubscribe(Flow.Subscription s) {
            subscription = s;
            s.request(1);
        }

        @Override
        public void onNext(String item) {
            received.add(item);
            subscription.request(1);
        }

        @Override
        public void onError(Throwable error) {
            done.completeExceptionally(error);
        }

        @Override
        public void onComplete() {
            done.complete(null);
        }
    }

    @BeforeClass(timeOut = 90_000)
    public void start() throws Exception {
        server = PythonRstreams.serve();
    }

    @AfterClass(alwaysRun = true)
    public void stop() throws Exception {
        if (server != null) {
            server.close();
        }
    }

    private static void readmeClient(String url, MySubscriber mySubscriber) throws Exception {
        // README client: begin
        try (RsioClient client = RsioClient.builder().build();
             RsioConnection conn = client.connect(url).get()) {
            Flow.Publisher<String> counter = conn.publisher("counter?from=1&to=6", Codec.UTF8);
            counter.subscribe(mySubscriber);          // demand travels to the server; cancel is acknowledged
            mySubscriber.done.join();                 // yours, completed by onComplete/onError: leaving the
        }                                             // block closes the connection, which fails its streams
        // README client: end
    }

    @Test(timeOut = 30_000)
    public void theReadmeClientReadsTheCounter() throws Exception {
        MySubscriber mySubscriber = new MySubscriber();
        readmeClient(server.url(), mySubscriber);
        assertEquals(mySubscriber.received, List.of("1", "2", "3", "4", "5"));
    }

    @Test
    public void theReadmeShowsThisClient() throws Exception {
        Path root = RepoPaths.root();
        Matcher block = Pattern.compile("```java\n(.*?)```", Pattern.DOTALL)
                .matcher(Files.readString(root.resolve("README.md")));
        assertTrue(block.find(), "README.md has no ```java block");
        List<String> readme = new ArrayList<>();
        for (String line : block.group(1).split("\n")) {
            readme.add(normal(line.replace(README_URL, "url")));
            if (line.startsWith("}")) {
                break;  // the end of the client's try block
            }
        }
        String source = Files.readString(root.resolve("java/src/test/java/io/rstreams/net/ReadmeExampleTest.java"));
        String between = source.substring(source.indexOf("// README client: begin\n") + 24, source.indexOf("// README client: end"));
        List<String> here = new ArrayList<>();
        for (String line : between.split("\n")) {
            if (!line.isBlank()) {
                here.add(normal(line));
            }
        }
        assertEquals(here, readme, "README.md's Java client and ReadmeExampleTest's copy differ");
    }

    private static String normal(String line) {
        return line.strip().replaceAll("\\s+", " ");
    }
}
