package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.PythonRstreams;
import io.rstreams.testing.RepoPaths;
import io.rstreams.testing.TestSubscriber;
import io.rstreams.wire.ErrorCode;
import io.rstreams.wire.Limits;
import io.rstreams.wire.ProtocolException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.testng.annotations.Test;

/**
 * The Java client opens channels (PROTOCOL.md §21), on the Java server and on a Python one: its
 * input is subscribed at the first inputRequest and sent only within the input demand granted
 * (§21.4, the peer ends the connection otherwise), an element above 64 KiB travels split
 * (§21.6), the input's end is sent (§21.5), the peer's inputCancel and the output's end cancel
 * the input; a peer without extension channels fails the subscription locally (§21.1). And the
 * Java server ends only the input of a split element above its max_element_size (§21.6).
 */
public class ChannelClientTest {
    private static final Path SERVER = RepoPaths.root().resolve("java/src/test/resources/python/channels_server.py");

    /** 300 small elements, then one of 100,000 bytes, then "end". */
    private static List<byte[]> items() {
        List<byte[]> items = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            items.add(("a" + i).getBytes(StandardCharsets.UTF_8));
        }
        byte[] big = new byte[100_000];
        Arrays.fill(big, (byte) 'b');
        items.add(big);
        items.add("end".getBytes(StandardCharsets.UTF_8));
        return items;
    }

    /** The output of a channel, read with demand 7 at a time; asserts it completes and returns it. */
    private static List<byte[]> collect(Flow.Publisher<byte[]> output, int n) throws Exception {
        TestSubscriber<byte[]> sub = new TestSubscriber<>();
        output.subscribe(sub);
        List<byte[]> got = new ArrayList<>();
        while (got.size() < n) {
            sub.request(Math.min(7, n - got.size()));
            got.addAll(sub.take(Math.min(7, n - got.size())));
        }
        sub.request(1);
        assertNull(sub.awaitTerminal());
        return got;
    }

    private static void assertUpper(List<byte[]> got) {
        assertEquals(got.size(), 302);
        assertEquals(new String(got.get(0), StandardCharsets.UTF_8), "A0");
        assertEquals(new String(got.get(299), StandardCharsets.UTF_8), "A299");
        byte[] big = new byte[100_000];
        Arrays.fill(big, (byte) 'B');
        assertEquals(got.get(300), big);
        assertEquals(new String(got.get(301), StandardCharsets.UTF_8), "END");
    }

    @Test(timeOut = 60_000)
    public void aChannelOnTheJavaServerGetsItsInputWithinTheDemandGranted() throws Exception {
        AtomicInteger peak = new AtomicInteger();
        CompletableFuture<Throwable> inputFailed = new CompletableFuture<>();
        CompletableFuture<Throwable> tied = new CompletableFuture<>();
        try (RsioServer server = RsioServer.builder()
                .channel("upper", (input, request) -> new ChannelServingTest.Upper(input, 3, peak, inputFailed))
                .channel("first", (input, request) -> first(input, tied))
                .bind("tcp://127.0.0.1:0");
             RsioClient client = RsioClient.builder().build();
             RsioConnection conn = client.connect(server.url()).get(10, TimeUnit.SECONDS)) {
            Source input = new Source(items(), false);
            assertUpper(collect(conn.channel("upper", input), 302));
            assertTrue(peak.get() > 0 && peak.get() <= 3, "the server granted at most 3 at a time, " + peak.get());
            assertTrue(input.maxOutstanding.get() <= 3, "asked of the input beyond the grant: " + input.maxOutstanding.get());
            assertTrue(input.completedSent.get() && !input.cancelled.get());

            // the input's failure is sent as inputError (§21.5)
            Source failing = new Source(List.of("x".getBytes(StandardCharsets.UTF_8)), true);
            TestSubscriber<byte[]> sub = new TestSubscriber<>();
            conn.channel("upper", failing).subscribe(sub);
            sub.request(5);
            Throwable seen = inputFailed.get(20, TimeUnit.SECONDS);
            assertTrue(seen instanceof ChannelInputException, String.valueOf(seen));
            assertEquals(seen.getMessage(), "IllegalStateException: the input broke");
            assertTrue(sub.awaitTerminal() instanceof RemoteStreamException);

            // the output ends first: the endless input is cancelled (the tie, §21.5)
            Source endless = new Source(null, false);
            TestSubscriber<byte[]> one = new TestSubscriber<>();
            conn.channel("first", endless).subscribe(one);
            one.request(5);
            assertNull(one.awaitTerminal());
            assertEquals(new String(one.all().get(0), StandardCharsets.UTF_8), "0");
            endless.cancelledFuture.get(20, TimeUnit.SECONDS);

            // an unknown channel: refused as the other bindings word it (§21.3)
            TestSubscriber<byte[]> none = new TestSubscriber<>();
            conn.channel("nowhere", new Source(List.of(), false)).subscribe(none);
            none.request(1);
            Throwable refused = none.awaitTerminal();
            assertTrue(refused instanceof RemoteStreamException, String.valueOf(refused));
            assertEquals(((RemoteStreamException) refused).errorCode(), ErrorCode.UNKNOWN_PUBLISHER);
            assertEquals(refused.getMessage(), "no channel named 'nowhere' (PROTOCOL.md §21.3)");
        }
    }

    /** §21.6: a split input element above the server's max_element_size ends that input (inputCancel), the output goes on. */
    @Test(timeOut = 60_000)
    public void aSplitInputElementAboveMaxElementSizeEndsOnlyTheInput() throws Exception {
        CompletableFuture<Throwable> inputEnded = new CompletableFuture<>();
        try (RsioServer server = RsioServer.builder()
                .limits(Limits.DEFAULT.withMaxElementSize(100_000))
                .channel("sizes", (input, request) -> sizes(input, inputEnded))
                .bind("tcp://127.0.0.1:0");
             RsioClient client = RsioClient.builder().build();
             RsioConnection conn = client.connect(server.url()).get(10, TimeUnit.SECONDS)) {
            List<byte[]> items = List.of(new byte[10], new byte[150_000], new byte[20]);
            Source input = new Source(items, false);
            input.hold = true; // the input stays open: only the inputCancel ends it
            TestSubscriber<String> sub = new TestSubscriber<>();
            conn.channel("sizes", input, Codec.BYTES, Codec.UTF8).subscribe(sub);
            sub.request(10);
            assertNull(sub.awaitTerminal());
            Throwable why = inputEnded.get(20, TimeUnit.SECONDS);
            assertTrue(why instanceof ProtocolException, String.valueOf(why));
            assertEquals(why.getMessage(), "split input element for subscriber 1 grows past max_element_size=100000 (PROTOCOL.md §11)");
            assertEquals(sub.all(), List.of("10", "input ended: split input element for subscriber 1 grows past max_element_size=100000 "
                    + "(PROTOCOL.md §11)"));
            input.cancelledFuture.get(20, TimeUnit.SECONDS); // the inputCancel reached the opener's input
            assertTrue(!input.completedSent.get());
            // the connection goes on
            List<byte[]> again = collect(conn.channel("sizes", new Source(List.of(new byte[3]), false)), 1);
            assertEquals(new String(again.get(0), StandardCharsets.UTF_8), "3");
        }
    }

    @Test(timeOut = 120_000)
    public void aChannelOnAPythonServer() throws Exception {
        PythonRstreams.python();
        try (PythonRstreams server = PythonRstreams.serve();
             RsioClient client = RsioClient.builder().build();
             RsioConnection conn = client.connect(server.url()).get(10, TimeUnit.SECONDS)) {
            Source input = new Source(items(), false);
            assertUpper(collect(conn.channel("upper", input), 302));
            assertTrue(input.completedSent.get() && !input.cancelled.get());
            assertTrue(input.maxOutstanding.get() <= ChannelSender.INPUT_WINDOW, String.valueOf(input.maxOutstanding.get()));
            List<byte[]> x = collect(conn.channel("upper", new Source(List.of("x".getBytes(StandardCharsets.UTF_8)), false)), 1);
            assertEquals(new String(x.get(0), StandardCharsets.UTF_8), "X");
        }
    }

    @Test(timeOut = 120_000)
    public void aPeerWithoutChannelsFailsTheSubscriptionLocally() throws Exception {
        PythonRstreams.python();
        try (PythonRstreams server = PythonRstreams.script(SERVER, "tcp://127.0.0.1:0", "--without-channels");
             RsioClient client = RsioClient.builder().build();
             RsioConnection conn = client.connect(server.url()).get(10, TimeUnit.SECONDS)) {
            Source input = new Source(List.of("x".getBytes(StandardCharsets.UTF_8)), false);
            TestSubscriber<byte[]> sub = new TestSubscriber<>();
            conn.channel("upper", input).subscribe(sub);
            sub.request(1);
            Throwable error = sub.awaitTerminal();
            assertTrue(error instanceof IllegalStateException, String.valueOf(error));
            assertEquals(error.getMessage(), "can't open a channel: the peer does not offer extension channels (id 8) (PROTOCOL.md §21.1); "
                    + "its hello does not list it");
            assertEquals(input.subscribed.get(), 0, "the input is never subscribed");
            TestSubscriber<String> plain = new TestSubscriber<>();
            conn.publisher("counter", Codec.UTF8).subscribe(plain);
            plain.request(5);
            assertNull(plain.awaitTerminal());
            assertEquals(plain.all(), List.of("0", "1", "2"));
        }
    }

    /** The input's first element, then complete; the input's subscriber records how it was ended. */
    private static Flow.Publisher<byte[]> first(Flow.Publisher<byte[]> input, CompletableFuture<Throwable> tied) {
        return downstream -> input.subscribe(new Flow.Subscriber<byte[]>() {
            private boolean sent;

            @Override
            public void onSubscribe(Flow.Subscription s) {
                downstream.onSubscribe(new Flow.Subscription() {
                    @Override
                    public void request(long n) {
                        s.request(1);
                    }

                    @Override
                    public void cancel() {}
                });
            }

            @Override
            public void onNext(byte[] item) {
                if (!sent) {
                    sent = true;
                    downstream.onNext(item);
                    downstream.onComplete();
                }
            }

            @Override
            public void onError(Throwable t) {
                tied.complete(t);
            }

            @Override
            public void onComplete() {
                tied.complete(null);
            }
        });
    }

    /** Each input element's size as text; when the input ends, "input ended: WHY" (if it failed) and complete. */
    private static Flow.Publisher<byte[]> sizes(Flow.Publisher<byte[]> input, CompletableFuture<Throwable> ended) {
        return downstream -> input.subscribe(new Flow.Subscriber<byte[]>() {
            @Override
            public void onSubscribe(Flow.Subscription s) {
                downstream.onSubscribe(new Flow.Subscription() {
                    @Override
                    public void request(long n) {
                        s.request(n);
                    }

                    @Override
                    public void cancel() {
                        s.cancel();
                    }
                });
            }

            @Override
            public void onNext(byte[] item) {
                downstream.onNext(String.valueOf(item.length).getBytes(StandardCharsets.UTF_8));
            }

            @Override
            public void onError(Throwable t) {
                ended.complete(t);
                downstream.onNext(("input ended: " + t.getMessage()).getBytes(StandardCharsets.UTF_8));
                downstream.onComplete();
            }

            @Override
            public void onComplete() {
                ended.complete(null);
                downstream.onComplete();
            }
        });
    }

    /**
     * The input: the items (null: endless "0", "1", ...), within the demand asked (it records the
     * most outstanding at once), then complete, or fail when {@code fail}; records its cancel.
     */
    private static final class Source implements Flow.Publisher<byte[]> {
        private final List<byte[]> items;
        private final boolean fail;
        volatile boolean hold; // neither complete nor fail after the items
        final AtomicInteger subscribed = new AtomicInteger();
        final AtomicLong maxOutstanding = new AtomicLong();
        final java.util.concurrent.atomic.AtomicBoolean cancelled = new java.util.concurrent.atomic.AtomicBoolean();
        final java.util.concurrent.atomic.AtomicBoolean completedSent = new java.util.concurrent.atomic.AtomicBoolean();
        final CompletableFuture<Void> cancelledFuture = new CompletableFuture<>();

        Source(List<byte[]> items, boolean fail) {
            this.items = items;
            this.fail = fail;
        }

        @Override
        public void subscribe(Flow.Subscriber<? super byte[]> s) {
            subscribed.incrementAndGet();
            s.onSubscribe(new Flow.Subscription() {
                private long demand;
                private int next;
                private boolean done;
                private boolean emitting;

                @Override
                public synchronized void request(long n) {
                    demand += n;
                    maxOutstanding.accumulateAndGet(demand, Math::max);
                    if (emitting) {
                        return;
                    }
                    emitting = true;
                    while (!done && demand > 0 && (items == null || next < items.size())) {
                        demand--;
                        byte[] item = items == null ? String.valueOf(next).getBytes(StandardCharsets.UTF_8) : items.get(next);
                        next++;
                        s.onNext(item);
                    }
                    if (!done && items != null && next == items.size() && !hold) {
                        done = true;
                        if (fail) {
                            s.onError(new IllegalStateException("the input broke"));
                        } else {
                            completedSent.set(true);
                            s.onComplete();
                        }
                    }
                    emitting = false;
                }

                @Override
                public synchronized void cancel() {
                    done = true;
                    cancelled.set(true);
                    cancelledFuture.complete(null);
                }
            });
        }
    }
}
