package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.PythonRstreams;
import io.rstreams.testing.RepoPaths;
import java.io.File;
import java.io.IOException;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/**
 * README.md's whole Java block, compiled and run in a JVM of its own: the client reads the
 * counter of {@code rstreams serve}, and the server the block builds serves {@code numbers?n=N}.
 * The block is read from README.md when the test runs; what the test fills in is what the block
 * leaves to its reader ({@code mySubscriber}, {@code myLongs}, the server block's body {@code ...})
 * and the port, each an exact string of the block, so a block that changes fails here until the
 * test follows. ReadmeExampleTest runs the client's lines within a test of its own too.
 */
public class ReadmeSnippetTest {
    private static final String README_URL = "\"tcp://127.0.0.1:9000\"";
    private static final String ELIDED_BODY = "{ ... }";

    /** What the block leaves to its reader: a subscriber with a {@code done} future, myLongs. */
    private static final String AROUND = """
            import io.rstreams.net.*;
            import java.util.concurrent.CompletableFuture;
            import java.util.concurrent.Flow;

            public class Main {
                static final class MySubscriber<T> implements Flow.Subscriber<T> {
                    final CompletableFuture<Void> done = new CompletableFuture<>();
                    private Flow.Subscription subscription;
                    public void onSubscribe(Flow.Subscription s) { subscription = s; s.request(1); }
                    public void onNext(T item) { System.out.println(item); subscription.request(1); }
                    public void onError(Throwable error) { done.completeExceptionally(error); }
                    public void onComplete() { done.complete(null); }
                }

                /** 0, 1, ..., n - 1, one per request (rule-exact enough for one subscriber). */
                static Flow.Publisher<Long> myLongs(long n) {
                    return subscriber -> subscriber.onSubscribe(new Flow.Subscription() {
                        long next;
                        boolean done;
                        public void request(long k) {
                            for (long i = 0; i < k && !done; i++) {
                                if (next == n) { done = true; subscriber.onComplete(); return; }
                                subscriber.onNext(next++);
                            }
                            if (next == n && !done) { done = true; subscriber.onComplete(); }
                        }
                        public void cancel() { done = true; }
                    });
                }

                public static void main(String[] args) throws Exception {
                    MySubscriber<String> mySubscriber = new MySubscriber<>();
            BLOCK
                }
            }
            """;

    /** The server block's body: read numbers?n=3 and numbers (its default, 10) from the block's server. */
    private static final String BODY = """
            {
                for (String name : new String[] {"numbers?n=3", "numbers"}) {
                    MySubscriber<Long> numbers = new MySubscriber<>();
                    try (RsioClient other = RsioClient.builder().build();
                         RsioConnection c = other.connect(server.url()).get()) {
                        c.publisher(name, Codec.INT64).subscribe(numbers);
                        numbers.done.join();
                    }
                    System.out.println("--");
                }
            }""";

    private PythonRstreams counter;

    @BeforeClass(timeOut = 90_000)
    public void start() throws Exception {
        counter = PythonRstreams.serve();
    }

    @AfterClass(alwaysRun = true)
    public void stop() throws Exception {
        if (counter != null) {
            counter.close();
        }
    }

    static String readmeBlock() throws IOException {
        Matcher block = Pattern.compile("```java\n(.*?)```", Pattern.DOTALL)
                .matcher(Files.readString(RepoPaths.root().resolve("README.md")));
        assertTrue(block.find(), "README.md has no ```java block");
        String text = block.group(1);
        assertTrue(!block.find(), "README.md has a second ```java block: give it a test");
        return text;
    }

    @Test(timeOut = 120_000)
    public void theReadmesJavaBlockCompilesAndRuns() throws Exception {
        String block = readmeBlock();
        for (String part : List.of(README_URL, ELIDED_BODY, "myLongs(request.longParam(\"n\", 10))", "// numbers?n=3")) {
            assertTrue(block.contains(part), "README.md's Java block no longer holds " + part);
        }
        String filled = block.replace(README_URL, '"' + counter.url() + '"').replace(ELIDED_BODY, BODY);
        Path dir = Files.createTempDirectory("rstreams-readme-java");
        Process program = null;
        try {
            Path source = dir.resolve("Main.java");
            Files.writeString(source, AROUND.replace("BLOCK", filled));
            String classpath = System.getProperty("java.class.path");
            JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
            StringWriter said = new StringWriter();
            boolean compiled = compiler.getTask(said, null, null,
                    List.of("--release", "17", "-classpath", classpath, "-d", dir.toString()), null,
                    compiler.getStandardFileManager(null, null, StandardCharsets.UTF_8).getJavaFileObjects(source))
                    .call();
            assertTrue(compiled, "README.md's Java block does not compile: " + said);
            Path java = Path.of(System.getProperty("java.home"), "bin", "java");
            program = new ProcessBuilder(java.toString(), "-cp", dir + File.pathSeparator + classpath, "Main")
                    .redirectError(dir.resolve("stderr.txt").toFile())
                    .start();
            String out = new String(program.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(program.waitFor(60, TimeUnit.SECONDS), "the program did not exit");
            assertEquals(program.exitValue(), 0, Files.readString(dir.resolve("stderr.txt")));
            // the counter (from=1&to=6), then numbers?n=3 and numbers (n: 10 by default) from the block's server
            List<String> expected = new ArrayList<>(List.of("1", "2", "3", "4", "5", "0", "1", "2", "--"));
            LongStream.range(0, 10).forEach(n -> expected.add(Long.toString(n)));
            expected.add("--");
            assertEquals(out.lines().toList(), expected);
        } finally {
            if (program != null) {
                program.destroyForcibly();
            }
            deleteTree(dir);
        }
    }

    private static void deleteTree(Path dir) throws IOException {
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(path);
            }
        }
    }
}
