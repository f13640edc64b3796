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
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.tools.ToolProvider;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/**
 * The README's Java client, as written there, against {@code rstreams serve}: the lines between
 * the markers below are the README's (its URL aside), and they read the whole counter. And
 * java/README.md's first program, compiled and run in a JVM of its own as written there.
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

    @Test(timeOut = 120_000)
    public void theJavaReadmesProgramRunsAsWritten() throws Exception {
        String readme = Files.readString(RepoPaths.root().resolve("java/README.md"));
        Matcher block = Pattern.compile("```java\n(.*?)```", Pattern.DOTALL).matcher(readme);
        assertTrue(block.find(), "java/README.md has no ```java block");
        assertTrue(block.group(1).contains(README_URL), "its program no longer reads " + README_URL);
        Path dir = Files.createTempDirectory("rstreams-java-readme");
        Process program = null;
        try {
            Path source = dir.resolve("Main.java");
            Files.writeString(source, block.group(1).replace(README_URL, '"' + server.url() + '"'));
            String classpath = System.getProperty("java.class.path");
            StringWriter said = new StringWriter();
            boolean compiled = ToolProvider.getSystemJavaCompiler().getTask(said, null, null,
                    List.of("--release", "17", "-classpath", classpath, "-d", dir.toString()), null,
                    ToolProvider.getSystemJavaCompiler().getStandardFileManager(null, null, StandardCharsets.UTF_8)
                            .getJavaFileObjects(source)).call();
            assertTrue(compiled, "java/README.md's program does not compile: " + said);
            Path java = Path.of(System.getProperty("java.home"), "bin", "java");
            program = new ProcessBuilder(java.toString(), "-cp", dir + File.pathSeparator + classpath, "Main")
                    .redirectError(dir.resolve("stderr.txt").toFile())
                    .start();
            String out = new String(program.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(program.waitFor(30, TimeUnit.SECONDS), "the program did not exit");
            assertEquals(program.exitValue(), 0, Files.readString(dir.resolve("stderr.txt")));
            assertEquals(out.lines().toList(), List.of("1", "2", "3", "4", "5"));
        } finally {
            if (program != null) {
                program.destroyForcibly();
            }
            deleteTree(dir);
        }
    }

    private static void deleteTree(Path dir) throws IOException {
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path path : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(path);
            }
        }
    }

    private static String normal(String line) {
        return line.strip().replaceAll("\\s+", " ");
    }
}
