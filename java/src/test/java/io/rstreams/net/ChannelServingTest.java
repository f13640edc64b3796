package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.PythonRstreams;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.testng.annotations.Test;

/**
 * The Java server serves channels (PROTOCOL.md §21) to a Python client: the factory's input is
 * requested only as far as its subscriber asks (§21.4), split input elements arrive joined
 * (§21.6), refusals are worded as in every binding (§21.3, §19.2), and the output's end ends the
 * input (§21.5).
 */
public class ChannelServingTest {
    /** Opens channels on URL and prints how each went. */
    private static final String CLIENT = String.join("\n",
            "import asyncio, itertools, sys",
            "import rstreams",
            "from rstreams.net import connect",
            "async def attempt(label, flow):",
            "    try:",
            "        return await rstreams.from_publisher(flow).collect()",
            "    except Exception as error:",
            "        print(label, 'failed', type(error).__name__, getattr(error, 'code', None), error)",
            "async def main(url):",
            "    async with await connect(url) as conn:",
            "        big = b'b' * 100_000",
            "        items = [b'a%d' % i for i in range(200)] + [big, b'c']",
            "        out = await attempt('upper', conn.channel('upper?lang=en', rstreams.from_iterable(items)))",
            "        print('upper', len(out), out[0], out[199], len(out[200]), out[200] == big.upper(), out[201])",
            "        await attempt('none', conn.channel('none', rstreams.from_iterable([b'x'])))",
            "        await attempt('nowhere', conn.channel('nowhere?x=1', rstreams.from_iterable([b'x'])))",
            "        await attempt('broken', conn.channel('broken/7', rstreams.from_iterable([b'x'])))",
            "        await attempt('plain', conn.publisher('upper?lang=en'))",
            "        out = await attempt('tie', conn.channel('first', rstreams.from_iterable(b'%d' % i for i in itertools.count())))",
            "        print('tie', out)",
            "        async def failing():",
            "            yield b'one'",
            "            raise ValueError('input broke')",
            "        await attempt('inputerror', conn.channel('upper', rstreams.from_async_iterable(failing())))",
            "        print('then', await rstreams.from_publisher(conn.publisher('counter?to=2')).collect())",
            "asyncio.run(main(sys.argv[1]))");

    /** The most input demand outstanding at once the upper channel granted. */
    private final AtomicInteger peak = new AtomicInteger();
    private final CompletableFuture<Throwable> tied = new CompletableFuture<>();
    private final CompletableFuture<Throwable> inputFailed = new CompletableFuture<>();

    @Test(timeOut = 120_000)
    public void aPythonClientsChannelsAreServed() throws Exception {
        PythonRstreams.python();
        try (RsioServer server = RsioServer.builder()
                .route("counter", Codec.UTF8, r -> Counters.repeat("x", r.longParam("to", 1)))
                .channel("upper", (input, request) -> new Upper(input, 3, peak, inputFailed))
                .channel("none", (input, request) -> null)
                .channel("broken/{n}", (input, request) -> {
                    throw new IllegalStateException("secret");
                })
                .channel("first", (input, request) -> first(input))
                .bind("tcp://127.0.0.1:0")) {
            PythonRstreams.Result result = PythonRstreams.run(100, "-c", CLIENT, server.url());
            String out = result.output();
            assertEquals(result.status(), 0, out);
            assertTrue(out.contains("upper 202 b'A0' b'A199' 100000 True b'C'"), out);
            assertTrue(peak.get() <= 3 && peak.get() > 0, "input demand outstanding at most 3, was " + peak.get());
            assertTrue(out.contains("none failed UnknownPublisher 2 remote publisher 'none' failed: no channel named 'none' (PROTOCOL.md §21.3)"), out);
            assertTrue(out.contains("nowhere failed UnknownPublisher 2 remote publisher 'nowhere?x=1' failed: "
                    + "no channel named 'nowhere' (PROTOCOL.md §21.3)"), out);
            assertTrue(out.contains("broken failed InternalError 9 remote publisher 'broken/7' failed: "
                    + "channel 'broken/7' could not be created: its factory failed (PROTOCOL.md §19.2)"), out);
            assertTrue(out.contains("plain failed UnknownPublisher 2 remote publisher 'upper?lang=en' failed: "
                    + "no publisher named 'upper' ('upper' is a channel: open it as one, PROTOCOL.md §21.3)"), out);
            assertTrue(out.contains("tie [b'0']"), out);
            Throwable t = tied.get(30, TimeUnit.SECONDS);
            assertTrue(t instanceof IllegalStateException, String.valueOf(t));
            assertEquals(t.getMessage(), "the channel's subscription ended before its input (PROTOCOL.md §21.5)");
            Throwable e = inputFailed.get(30, TimeUnit.SECONDS);
            assertTrue(e instanceof ChannelInputException, String.valueOf(e));
            assertEquals(e.getMessage(), "ValueError: input broke");
            assertTrue(out.contains("inputerror failed"), out);
            assertTrue(out.contains("then ['x', 'x']"), out);
        }
    }

    /** The input's first element, then complete; the input's subscriber records how it was ended. */
    private Flow.Publisher<byte[]> first(Flow.Publisher<byte[]> input) {
        return downstream -> input.subscribe(new Flow.Subscriber<byte[]>() {
            private Flow.Subscription s;
            private boolean sent;

            @Override
            public void onSubscribe(Flow.Subscription subscription) {
                s = subscription;
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
                    downstream.onComplete(); // the output ends first: the input fails (§21.5)
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

    /** Upper-cases the input, asking it for at most {@code batch} elements at a time and no more than the output's demand. */
    static final class Upper implements Flow.Publisher<byte[]> {
        private final Flow.Publisher<byte[]> input;
        private final int batch;
        private final AtomicInteger peak;
        private final CompletableFuture<Throwable> failed;

        Upper(Flow.Publisher<byte[]> input, int batch, AtomicInteger peak, CompletableFuture<Throwable> failed) {
            this.input = input;
            this.batch = batch;
            this.peak = peak;
            this.failed = failed;
        }

        @Override
        public void subscribe(Flow.Subscriber<? super byte[]> downstream) {
            input.subscribe(new Flow.Subscriber<byte[]>() {
                private Flow.Subscription upstream;
                private long wanted; // the output's demand not yet asked of the input
                private long asked; // asked of the input, not yet received

                @Override
                public void onSubscribe(Flow.Subscription s) {
                    upstream = s;
                    downstream.onSubscribe(new Flow.Subscription() {
                        @Override
                        public void request(long n) {
                            synchronized (Upper.this) {
                                wanted = wanted + n < 0 ? Long.MAX_VALUE : wanted + n;
                            }
                            pull();
                        }

                        @Override
                        public void cancel() {
                            upstream.cancel();
                        }
                    });
                }

                private void pull() {
                    long n;
                    synchronized (Upper.this) {
                        if (asked > 0 || wanted == 0) {
                            return;
                        }
                        n = Math.min(batch, wanted);
                        wanted -= n;
                        asked = n;
                        peak.accumulateAndGet((int) n, Math::max);
                    }
                    upstream.request(n);
                }

                @Override
                public void onNext(byte[] item) {
                    synchronized (Upper.this) {
                        asked--;
                    }
                    downstream.onNext(new String(item, StandardCharsets.ISO_8859_1).toUpperCase().getBytes(StandardCharsets.ISO_8859_1));
                    pull();
                }

                @Override
                public void onError(Throwable t) {
                    failed.complete(t);
                    downstream.onError(t);
                }

                @Override
                public void onComplete() {
                    downstream.onComplete();
                }
            });
        }
    }
}
