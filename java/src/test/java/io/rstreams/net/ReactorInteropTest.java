package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.PythonRstreams;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import java.util.stream.LongStream;
import org.reactivestreams.FlowAdapters;
import org.testng.annotations.Test;
import reactor.adapter.JdkFlowAdapter;
import reactor.core.publisher.Flux;

/**
 * Project Reactor on either side of the wire, with the Python implementation on the other:
 * the demand each side sees is what the other side asked for.
 */
public class ReactorInteropTest {

    @Test(timeOut = 90_000)
    public void aFluxServedByJavaIsReadByThePythonClientWithinItsWindow() throws Exception {
        List<Long> requests = new CopyOnWriteArrayList<>();
        AtomicLong emitted = new AtomicLong();
        AtomicLong maxOutstanding = new AtomicLong();
        AtomicLong requested = new AtomicLong();
        CompletableFuture<Boolean> cancelled = new CompletableFuture<>();
        Flux<String> flux = Flux.range(0, 1000)
                .map(i -> "item-" + i)
                .doOnRequest(n -> {
                    requests.add(n);
                    long outstanding = requested.addAndGet(n) - emitted.get();
                    maxOutstanding.accumulateAndGet(outstanding, Math::max);
                })
                .doOnNext(x -> emitted.incrementAndGet())
                .doOnCancel(() -> cancelled.complete(true));
        try (RsioServer server = RsioServer.builder()
                .route("flux", Codec.UTF8, r -> JdkFlowAdapter.publisherToFlowPublisher(flux))
                .bind("tcp://127.0.0.1:0")) {
            PythonRstreams.Result result = PythonRstreams.run(60, "-m", "rstreams.cli", "subscribe", server.url(), "flux",
                    "--demand", "4", "--count", "25");
            assertEquals(result.status(), 0, result.output());
            List<String> lines = result.output().lines().filter(l -> l.startsWith("item-")).collect(Collectors.toList());
            List<String> expected = new ArrayList<>();
            for (int i = 0; i < 25; i++) {
                expected.add("item-" + i);
            }
            assertEquals(lines, expected);
            assertTrue(maxOutstanding.get() <= 4, "the Flux was asked for more than the Python client's window of 4: " + requests);
            assertTrue(requested.get() >= 25 && requested.get() <= 25 + 4, "requests " + requests);
            // the client's cancel, sent after its 25th element, reaches the Flux
            assertTrue(cancelled.get(10, TimeUnit.SECONDS));
        }
    }

    @Test(timeOut = 90_000)
    public void aPythonPublisherIsAFluxWithLimitRate() throws Exception {
        List<Long> upstream = new CopyOnWriteArrayList<>();
        try (PythonRstreams python = PythonRstreams.serve();
             RsioClient client = RsioClient.builder().build();
             RsioConnection conn = client.connect(python.url()).get(10, TimeUnit.SECONDS)) {
            List<Long> got = Flux.from(FlowAdapters.toPublisher(conn.publisher("counter?to=100", Codec.UTF8)))
                    .doOnRequest(upstream::add) // what crosses the wire as request(n)
                    .limitRate(10)
                    .map(Long::parseLong)
                    .collectList()
                    .block(Duration.ofSeconds(30));
            assertEquals(got, LongStream.range(0, 100).boxed().collect(Collectors.toList()));
            assertEquals(upstream.get(0), Long.valueOf(10), "limitRate(10) asks for 10 first: " + upstream);
            assertTrue(upstream.stream().allMatch(n -> n <= 10), "never more than 10 at a time: " + upstream);
            assertTrue(upstream.size() >= 10, "replenished in small steps: " + upstream);
        }
    }
}
