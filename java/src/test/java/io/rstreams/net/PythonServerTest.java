package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.Closing;
import io.rstreams.testing.PythonRstreams;
import io.rstreams.testing.RepoPaths;
import io.rstreams.testing.TestSubscriber;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/** The Java client against a live Python server ({@code rstreams serve}): the codecs agree, demand is respected. */
public class PythonServerTest {
    private PythonRstreams utf8;
    private PythonRstreams int64;
    private RsioClient client;

    @BeforeClass(timeOut = 90_000)
    public void start() throws Exception {
        utf8 = PythonRstreams.serve();
        int64 = PythonRstreams.serve("--codec", "int64");
        client = RsioClient.builder().build();
    }

    @AfterClass(alwaysRun = true)
    public void stop() throws Exception {
        Closing.all(client, utf8, int64);
    }

    @Test(timeOut = 30_000)
    public void utf8CounterArrivesAsText() throws Exception {
        try (RsioConnection conn = client.connect(utf8.url()).get(10, TimeUnit.SECONDS)) {
            TestSubscriber<String> sub = new TestSubscriber<>();
            conn.publisher("counter?from=1&to=6", Codec.UTF8).subscribe(sub);
            sub.request(10);
            assertEquals(sub.take(5), List.of("1", "2", "3", "4", "5"));
            assertNull(sub.awaitTerminal());
        }
    }

    @Test(timeOut = 30_000)
    public void int64CounterArrivesPackedAsLongs() throws Exception {
        try (RsioConnection conn = client.connect(int64.url()).get(10, TimeUnit.SECONDS)) {
            TestSubscriber<Long> sub = new TestSubscriber<>();
            conn.publisher("counter?from=-3&to=1000", Codec.INT64).subscribe(sub);
            sub.request(Long.MAX_VALUE);
            List<Long> got = sub.take(1003);
            assertEquals(got.get(0), Long.valueOf(-3));
            assertEquals(got.get(1002), Long.valueOf(999));
            assertNull(sub.awaitTerminal());
        }
    }

    @Test(timeOut = 30_000)
    public void demandBoundsWhatArrives() throws Exception {
        try (RsioConnection conn = client.connect(utf8.url()).get(10, TimeUnit.SECONDS)) {
            TestSubscriber<String> sub = new TestSubscriber<>();
            conn.publisher("counter", Codec.UTF8).subscribe(sub);
            sub.request(3);
            assertEquals(sub.take(3), List.of("0", "1", "2"));
            // a round trip on another stream proves the server had time to send more, had it broken §6.3
            TestSubscriber<String> probe = new TestSubscriber<>();
            conn.publisher("counter?to=1", Codec.UTF8).subscribe(probe);
            probe.request(2); // the counter learns that it has ended when asked for the next element
            assertNull(probe.awaitTerminal());
            assertEquals(sub.all().size(), 3);
            sub.request(2);
            assertEquals(sub.take(2), List.of("3", "4"));
            sub.subscription().cancel();
        }
    }

    @Test(timeOut = 60_000)
    public void tokenAuthenticationAgainstAServerThatRequiresIt() throws Exception {
        try (PythonRstreams guarded = PythonRstreams.serve("--token", "s3cret-token");
             RsioClient withToken = RsioClient.builder().token("s3cret-token").build();
             RsioConnection conn = withToken.connect(guarded.url()).get(10, TimeUnit.SECONDS)) {
            TestSubscriber<String> sub = new TestSubscriber<>();
            conn.publisher("counter?to=3", Codec.UTF8).subscribe(sub);
            sub.request(5);
            assertEquals(sub.take(3), List.of("0", "1", "2"));
            assertNull(sub.awaitTerminal());
            assertTrue(conn.activeExtensions().contains(2L), "auth (id 2) is active: " + conn.activeExtensions());

            RsioConnection anonymous = client.connect(guarded.url()).get(10, TimeUnit.SECONDS);
            TestSubscriber<String> refused = new TestSubscriber<>();
            anonymous.publisher("counter?to=3", Codec.UTF8).subscribe(refused);
            refused.request(5);
            Throwable error = refused.awaitTerminal();
            assertTrue(error instanceof ConnectionClosedException, String.valueOf(error));
            assertTrue(error.getMessage().contains("authentication required"), error.getMessage());
            assertTrue(!error.getMessage().contains("s3cret"), "no secret in messages");
        }
    }

    @Test(timeOut = 60_000)
    public void userAndPasswordAgainstAPythonServerThatChecksThem() throws Exception {
        Path script = RepoPaths.root().resolve("java/src/test/resources/python/user_password_server.py");
        try (PythonRstreams guarded = PythonRstreams.script(script, "tcp://127.0.0.1:0", "ann", "pa55-word");
             RsioClient ann = RsioClient.builder().userPassword("ann", "pa55-word").build();
             RsioClient mallory = RsioClient.builder().userPassword("ann", "guess").build();
             RsioConnection conn = ann.connect(guarded.url()).get(10, TimeUnit.SECONDS);
             RsioConnection refused = mallory.connect(guarded.url()).get(10, TimeUnit.SECONDS)) {
            TestSubscriber<String> sub = new TestSubscriber<>();
            conn.publisher("counter?to=3", Codec.UTF8).subscribe(sub);
            sub.request(5);
            assertEquals(sub.take(3), List.of("0", "1", "2"));
            assertNull(sub.awaitTerminal());

            TestSubscriber<String> wrong = new TestSubscriber<>();
            refused.publisher("counter?to=3", Codec.UTF8).subscribe(wrong);
            wrong.request(5);
            Throwable error = wrong.awaitTerminal();
            assertTrue(error instanceof ConnectionClosedException, String.valueOf(error));
            assertTrue(error.getMessage().contains("authentication failed"), error.getMessage());
            assertTrue(!error.getMessage().contains("guess") && wrong.all().isEmpty(), error.getMessage());
        }
    }

    @Test(timeOut = 60_000)
    public void overAUnixSocket() throws Exception {
        Path socket = Files.createTempDirectory("rsio-py").resolve("rsio.sock");
        try (PythonRstreams python = PythonRstreams.serveAt("unix://" + socket);
             RsioConnection conn = client.connect(python.url()).get(10, TimeUnit.SECONDS)) {
            assertEquals(python.url(), "unix://" + socket);
            TestSubscriber<String> sub = new TestSubscriber<>();
            conn.publisher("counter?from=7&to=10", Codec.UTF8).subscribe(sub);
            sub.request(10);
            assertEquals(sub.take(3), List.of("7", "8", "9"));
            assertNull(sub.awaitTerminal());
        }
    }

    @Test(timeOut = 30_000)
    public void wrongTokenEndsTheConnection() throws Exception {
        try (PythonRstreams guarded = PythonRstreams.serve("--token", "right");
             RsioClient wrong = RsioClient.builder().token("wrong").build();
             RsioConnection conn = wrong.connect(guarded.url()).get(10, TimeUnit.SECONDS)) {
            TestSubscriber<String> sub = new TestSubscriber<>();
            conn.publisher("counter?to=3", Codec.UTF8).subscribe(sub);
            sub.request(5);
            Throwable error = sub.awaitTerminal();
            assertTrue(error instanceof ConnectionClosedException, String.valueOf(error));
            assertTrue(error.getMessage().contains("authentication failed"), error.getMessage());
        }
    }

    @Test(timeOut = 30_000)
    public void unknownNameFailsTheStreamNotTheConnection() throws Exception {
        try (RsioConnection conn = client.connect(utf8.url()).get(10, TimeUnit.SECONDS)) {
            TestSubscriber<String> sub = new TestSubscriber<>();
            conn.publisher("no/such/thing", Codec.UTF8).subscribe(sub);
            sub.request(1);
            Throwable error = sub.awaitTerminal();
            assertTrue(error instanceof RemoteStreamException, String.valueOf(error));
            assertTrue(error.getMessage().contains("no/such/thing"), error.getMessage());
            TestSubscriber<String> after = new TestSubscriber<>();
            conn.publisher("counter?to=2", Codec.UTF8).subscribe(after);
            after.request(5);
            assertEquals(after.take(2), List.of("0", "1"));
            assertTrue(conn.isOpen());
        }
    }
}
