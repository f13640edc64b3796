package io.rstreams.net;

import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.TestSubscriber;
import io.rstreams.wire.ErrorCode;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.Test;

/**
 * {@link RsioClient#close()}, {@link RsioConnection#close()} and {@link RsioServer#close()} called
 * from a callback, on one of their own I/O threads: they start the close (goodbye with code 0,
 * PROTOCOL.md §9.1) and return at once, since that thread has the close to do once the callback
 * returns; the peer sees the goodbye, and the threads stop.
 */
public class CloseOnIoThreadTest {
    /** Subscribes to the client's "silent" on every connection; completes with the error that ended it. */
    private final CompletableFuture<Throwable> atServer = new CompletableFuture<>();

    private RsioServer server() throws InterruptedException {
        return RsioServer.builder()
                .route("counter", Codec.INT64, r -> Counters.range(0, Long.MAX_VALUE))
                .onConnection(conn -> {
                    TestSubscriber<byte[]> sub = new TestSubscriber<>();
                    sub.terminated.whenComplete((error, e) -> atServer.complete(error));
                    conn.publisher("silent").subscribe(sub); // a publisher of the client (§1)
                })
                .bind("tcp://127.0.0.1:0");
    }

    /** Takes the server's counter one element at a time; runs {@code close} in its first onNext. */
    private static final class ClosingSubscriber implements Flow.Subscriber<Long> {
        final CompletableFuture<Void> returned = new CompletableFuture<>();
        final CompletableFuture<Throwable> ended = new CompletableFuture<>();
        private final Runnable close;

        ClosingSubscriber(Runnable close) {
            this.close = close;
        }

        @Override
        public void onSubscribe(Flow.Subscription s) {
            s.request(1);
        }

        @Override
        public void onNext(Long item) {
            if (!returned.isDone()) {
                close.run();
                returned.complete(null);
            }
        }

        @Override
        public void onError(Throwable error) {
            ended.complete(error);
        }

        @Override
        public void onComplete() {
            ended.complete(null);
        }
    }

    private void endsWithTheGoodbye(ClosingSubscriber sub) throws Exception {
        sub.returned.get(20, TimeUnit.SECONDS); // close() returned on the I/O thread
        Throwable error = sub.ended.get(20, TimeUnit.SECONDS);
        assertTrue(error instanceof ConnectionClosedException && error.getMessage().contains("closed by this end"),
                String.valueOf(error));
        Throwable there = atServer.get(20, TimeUnit.SECONDS);
        assertTrue(there instanceof ConnectionClosedException c && c.errorCode() == ErrorCode.NORMAL, String.valueOf(there));
    }

    @Test(timeOut = 60_000)
    public void aClientClosedFromItsSubscriberSaysGoodbyeAndStopsItsThreads() throws Exception {
        try (RsioServer server = server()) {
            RsioClient client = RsioClient.builder().serve("silent", r -> Counters.silent()).build();
            try {
                RsioConnection conn = client.connect(server.url()).get(20, TimeUnit.SECONDS);
                ClosingSubscriber sub = new ClosingSubscriber(client::close);
                conn.publisher("counter", Codec.INT64).subscribe(sub);
                endsWithTheGoodbye(sub);
                conn.onClose().get(20, TimeUnit.SECONDS);
            } finally {
                client.close(); // from this thread: returns once the I/O threads have stopped
            }
        }
    }

    @Test(timeOut = 60_000)
    public void aConnectionClosedFromItsSubscriberSaysGoodbye() throws Exception {
        try (RsioServer server = server();
                RsioClient client = RsioClient.builder().serve("silent", r -> Counters.silent()).build()) {
            RsioConnection conn = client.connect(server.url()).get(20, TimeUnit.SECONDS);
            ClosingSubscriber sub = new ClosingSubscriber(conn::close);
            conn.publisher("counter", Codec.INT64).subscribe(sub);
            endsWithTheGoodbye(sub);
            conn.onClose().get(20, TimeUnit.SECONDS);
            assertFalse(conn.isOpen());
        }
    }

    @Test(timeOut = 60_000)
    public void aServerClosedFromAPublisherFactorySaysGoodbyeAndStopsItsThreads() throws Exception {
        CompletableFuture<RsioServer> self = new CompletableFuture<>();
        CompletableFuture<Void> returned = new CompletableFuture<>();
        RsioServer server = RsioServer.builder()
                .route("stop", r -> {
                    self.join().close(); // on the server's I/O thread
                    returned.complete(null);
                    return Counters.silent();
                })
                .bind("tcp://127.0.0.1:0");
        self.complete(server);
        try (RsioClient client = RsioClient.builder().build()) {
            RsioConnection conn = client.connect(server.url()).get(20, TimeUnit.SECONDS);
            TestSubscriber<byte[]> sub = new TestSubscriber<>();
            conn.publisher("stop").subscribe(sub);
            sub.request(1);
            returned.get(20, TimeUnit.SECONDS);
            Throwable error = sub.awaitTerminal();
            assertTrue(error instanceof ConnectionClosedException c && c.errorCode() == ErrorCode.NORMAL
                    && error.getMessage().endsWith("server closing"), String.valueOf(error));
        } finally {
            server.close(); // from this thread: returns once the I/O threads have stopped
        }
    }
}
