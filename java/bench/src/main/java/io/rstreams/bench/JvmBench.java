package io.rstreams.bench;

import io.rsocket.Payload;
import io.rsocket.RSocket;
import io.rsocket.SocketAcceptor;
import io.rsocket.core.RSocketConnector;
import io.rsocket.core.RSocketServer;
import io.rsocket.transport.netty.client.TcpClientTransport;
import io.rsocket.transport.netty.server.CloseableChannel;
import io.rsocket.transport.netty.server.TcpServerTransport;
import io.rsocket.util.DefaultPayload;
import io.rstreams.net.RsioClient;
import io.rstreams.net.RsioConnection;
import io.rstreams.net.RsioServer;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.reactivestreams.Subscription;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;

/**
 * The JVM side of {@code rstreams bench jvm} and {@code jvm-memory} (benchmarks/net_jvm.py
 * starts it): one stream over loopback TCP, rstreams-java or rsocket-java at both ends, or
 * rstreams-java's client against a Python {@code rstreams} server.
 *
 * <pre>
 * server --impl rstreams|rsocket          prints its port; serves until stdin closes; the stdin
 *                                         line "heap" answers with the heap in use after a GC
 * client --impl rstreams|rsocket --port P --mode stream|memory --size S --count N --window W
 *        [--duration D --slow-factor F]   prints one JSON line (the memory mode prints the line
 *                                         "slow" first, when the slow reading starts)
 * </pre>
 *
 * <p>Both servers emit {@code n} times the same {@code size} random bytes, inside the peer's
 * demand: rstreams-java through a Flow.Publisher, rsocket-java through {@code Flux.range(...).map}
 * of one shared payload. A stream is named {@code bench?size=S&n=N} (the name the Python
 * benchmark server serves, benchmarks/net_rstreams.py); rsocket-java's request-stream carries
 * {@code S,N} as its data. The client's subscriber asks for {@code window} first and then
 * {@code window/2} each time that many arrived (never more than {@code window} outstanding),
 * after a warm-up stream of {@code N/10} on the same connection.
 */
public final class JvmBench {
    private JvmBench() {}

    public static void main(String[] argv) throws Exception {
        Map<String, String> args = parse(argv);
        String role = args.getOrDefault("role", "");
        String impl = args.getOrDefault("impl", "rstreams");
        if (!impl.equals("rstreams") && !impl.equals("rsocket")) {
            throw new IllegalArgumentException("--impl is rstreams or rsocket, got " + impl);
        }
        switch (role) {
            case "server" -> serve(impl);
            case "client" -> System.out.println(json(client(impl, args)));
            default -> throw new IllegalArgumentException("the first argument is server or client, got '" + role + "'");
        }
        System.out.flush();
        System.exit(0);
    }

    private static Map<String, String> parse(String[] argv) {
        Map<String, String> args = new TreeMap<>();
        if (argv.length > 0) {
            args.put("role", argv[0]);
        }
        for (int i = 1; i < argv.length; i += 2) {
            if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
                throw new IllegalArgumentException("options come as --name value pairs, got '" + argv[i] + "'");
            }
            args.put(argv[i].substring(2), argv[i + 1]);
        }
        return args;
    }

    private static long number(Map<String, String> args, String key, long fallback) {
        return args.containsKey(key) ? Long.parseLong(args.get(key)) : fallback;
    }

    // ------------------------------------------------------------------------------ server

    static byte[] body(int size) {
        byte[] b = new byte[size];
        new Random(size).nextBytes(b);
        return b;
    }

    private static void serve(String impl) throws Exception {
        AutoCloseable server;
        int port;
        if (impl.equals("rstreams")) {
            RsioServer s = RsioServer.builder()
                    .route("bench", r -> new Repeat(body((int) r.longParam("size", 8)), r.longParam("n", 0)))
                    .bind("tcp://127.0.0.1:0");
            server = s;
            port = s.port();
        } else {
            CloseableChannel s = RSocketServer.create(SocketAcceptor.forRequestStream(JvmBench::rsocketStream))
                    .bind(TcpServerTransport.create("127.0.0.1", 0))
                    .block();
            server = Objects.requireNonNull(s)::dispose;
            port = s.address().getPort();
        }
        System.out.println(port);
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            if (line.trim().equals("heap")) {
                System.gc();
                long used = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
                System.out.println("{\"heap_mib\": " + used / 1048576.0 + "}");
                System.out.flush();
            }
        }
        server.close();
    }

    private static Flux<Payload> rsocketStream(Payload request) {
        String[] spec = request.getDataUtf8().split(",");
        request.release();
        Payload one = DefaultPayload.create(body(Integer.parseInt(spec[0])));
        return Flux.range(0, Integer.parseInt(spec[1])).map(i -> one);
    }

    /** {@code n} times {@code element}, never beyond demand, trampolined (rule 3.3). */
    static final class Repeat implements Flow.Publisher<byte[]> {
        private final byte[] element;
        private final long n;

        Repeat(byte[] element, long n) {
            this.element = element;
            this.n = n;
        }

        @Override
        public void subscribe(Flow.Subscriber<? super byte[]> subscriber) {
            RepeatSubscription s = new RepeatSubscription(subscriber, element, n);
            subscriber.onSubscribe(s);
        }
    }

    private static final class RepeatSubscription implements Flow.Subscription {
        private final Flow.Subscriber<? super byte[]> subscriber;
        private final byte[] element;
        private final AtomicLong demand = new AtomicLong();
        private final AtomicInteger wip = new AtomicInteger();
        private volatile boolean done;
        private long left;

        RepeatSubscription(Flow.Subscriber<? super byte[]> subscriber, byte[] element, long n) {
            this.subscriber = subscriber;
            this.element = element;
            this.left = n;
        }

        @Override
        public void request(long k) {
            if (k <= 0) {
                done = true;
                subscriber.onError(new IllegalArgumentException("rule 3.9: request(n) needs an int n > 0 (non-positive subscription request), got " + k));
                return;
            }
            demand.accumulateAndGet(k, (a, b) -> a + b < 0 ? Long.MAX_VALUE : a + b);
            drain();
        }

        @Override
        public void cancel() {
            done = true;
        }

        private void drain() {
            if (wip.getAndIncrement() != 0) {
                return;
            }
            int missed = 1;
            do {
                long d = demand.get();
                long sent = 0;
                while (!done && sent < d && left > 0) {
                    left--;
                    sent++;
                    subscriber.onNext(element);
                }
                if (!done && left == 0) {
                    done = true;
                    subscriber.onComplete();
                }
                if (sent > 0 && d != Long.MAX_VALUE) {
                    demand.addAndGet(-sent);
                }
                missed = wip.addAndGet(-missed);
            } while (missed != 0);
        }
    }

    // ------------------------------------------------------------------------------ client

    /** What one stream's client side does with its elements; the library's subscriber calls it. */
    abstract static class Reader {
        final long window;
        final CompletableFuture<Long> done = new CompletableFuture<>();
        long count;
        long bytes;
        private long since;

        Reader(long window) {
            this.window = window;
        }

        /** Counts one element; returns how much to request now (0: nothing). */
        long next(int size) {
            count++;
            bytes += size;
            if (window == Long.MAX_VALUE) {
                return 0;
            }
            if (++since == window / 2) {
                since = 0;
                return window / 2;
            }
            return 0;
        }

        /** Whether to stop (cancel) after this element; the slow reader's pause happens here. */
        boolean enough() {
            return false;
        }
    }

    /** Reads at {@code rate} elements/s by sleeping on the I/O thread, until {@code deadline}. */
    static final class SlowReader extends Reader {
        private final double rate;
        private final long deadline;
        private final long start = System.nanoTime();

        SlowReader(double rate, long deadline) {
            super(Long.MAX_VALUE);
            this.rate = rate;
            this.deadline = deadline;
        }

        @Override
        boolean enough() {
            if (count % 64 != 0) {
                return false;
            }
            long now = System.nanoTime();
            if (now >= deadline) {
                return true;
            }
            if (rate > 0) {
                long pause = start + (long) (count / rate * 1e9) - now;
                if (pause > 0) {
                    try {
                        TimeUnit.NANOSECONDS.sleep(pause);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return true;
                    }
                }
            }
            return false;
        }
    }

    /** One library's client: streams {@code count} elements of {@code size} bytes into a reader. */
    interface Library extends AutoCloseable {
        void stream(int size, long count, Reader reader);
    }

    static final class Rstreams implements Library {
        private final RsioClient client = RsioClient.builder().build();
        private final RsioConnection conn;

        Rstreams(int port) throws Exception {
            conn = client.connect("tcp://127.0.0.1:" + port).get(30, TimeUnit.SECONDS);
        }

        @Override
        public void stream(int size, long count, Reader reader) {
            conn.publisher("bench?size=" + size + "&n=" + count).subscribe(new Flow.Subscriber<byte[]>() {
                Flow.Subscription s;

                @Override
                public void onSubscribe(Flow.Subscription s) {
                    this.s = s;
                    s.request(reader.window);
                }

                @Override
                public void onNext(byte[] item) {
                    long more = reader.next(item.length);
                    if (reader.enough()) {
                        s.cancel();
                        reader.done.complete(reader.count);
                    } else if (more > 0) {
                        s.request(more);
                    }
                }

                @Override
                public void onError(Throwable t) {
                    reader.done.completeExceptionally(t);
                }

                @Override
                public void onComplete() {
                    reader.done.complete(reader.count);
                }
            });
        }

        @Override
        public void close() {
            conn.close();
            client.close();
        }
    }

    static final class Rsocket implements Library {
        private final RSocket rsocket;

        Rsocket(int port) {
            rsocket = Objects.requireNonNull(RSocketConnector.create().connect(TcpClientTransport.create("127.0.0.1", port))
                    .block());
        }

        @Override
        public void stream(int size, long count, Reader reader) {
            rsocket.requestStream(DefaultPayload.create(size + "," + count)).subscribe(new BaseSubscriber<Payload>() {
                @Override
                protected void hookOnSubscribe(Subscription s) {
                    s.request(reader.window);
                }

                @Override
                protected void hookOnNext(Payload item) {
                    long more = reader.next(item.data().readableBytes());
                    item.release();
                    if (reader.enough()) {
                        cancel();
                        reader.done.complete(reader.count);
                    } else if (more > 0) {
                        request(more);
                    }
                }

                @Override
                protected void hookOnError(Throwable t) {
                    reader.done.completeExceptionally(t);
                }

                @Override
                protected void hookOnComplete() {
                    reader.done.complete(reader.count);
                }
            });
        }

        @Override
        public void close() {
            rsocket.dispose();
        }
    }

    private static Map<String, Object> client(String impl, Map<String, String> args) throws Exception {
        int port = (int) number(args, "port", 0);
        int size = (int) number(args, "size", 8);
        long count = number(args, "count", 200_000);
        long window = number(args, "window", 256);
        double timeout = number(args, "timeout", 300);
        String mode = args.getOrDefault("mode", "stream");
        Map<String, Object> result = new TreeMap<>();
        try (Library lib = impl.equals("rstreams") ? new Rstreams(port) : new Rsocket(port)) {
            if (mode.equals("stream")) {
                run(lib, size, Math.max(1, count / 10), new Reader(window) {}, timeout);
                System.gc();
                Reader reader = new Reader(window) {};
                double seconds = run(lib, size, count, reader, timeout);
                if (reader.count != count) {
                    throw new IllegalStateException("received " + reader.count + " elements, expected " + count);
                }
                result.put("rate", count / seconds);
                result.put("mbps", reader.bytes / seconds / 1e6);
                result.put("seconds", seconds);
                result.put("count", count);
            } else if (mode.equals("memory")) {
                double duration = number(args, "duration", 60);
                double slowFactor = Double.parseDouble(args.getOrDefault("slow-factor", "10"));
                long warm = number(args, "warm-count", 1_000_000);
                Reader fast = new SlowReader(0, System.nanoTime() + (long) (Math.min(5, duration) * 1e9));
                double fastSeconds = run(lib, size, warm, fast, timeout);
                double fastRate = fast.count / fastSeconds;
                Thread.sleep(500);
                System.gc();
                System.out.println("slow"); // the script takes its baselines within the next second
                System.out.flush();
                Thread.sleep(1000);
                Reader slow = new SlowReader(fastRate / slowFactor, System.nanoTime() + (long) (duration * 1e9));
                double seconds = run(lib, size, count, slow, duration + timeout);
                result.put("received", slow.count);
                result.put("fast_rate", fastRate);
                result.put("slow_rate", slow.count / seconds);
                result.put("slowdown", fastRate / Math.max(1e-9, slow.count / seconds));
            } else {
                throw new IllegalArgumentException("--mode is stream or memory, got " + mode);
            }
        }
        result.put("impl", impl.equals("rstreams") ? "rstreams-java" : "rsocket-java");
        result.put("version", version(impl));
        result.put("loop", "Java " + Runtime.version().feature());
        return result;
    }

    private static double run(Library lib, int size, long count, Reader reader, double timeout) throws Exception {
        long t0 = System.nanoTime();
        lib.stream(size, count, reader);
        reader.done.get((long) timeout, TimeUnit.SECONDS);
        return (System.nanoTime() - t0) / 1e9;
    }

    private static String version(String impl) {
        Package p = (impl.equals("rstreams") ? RsioClient.class : RSocket.class).getPackage();
        String v = p == null ? null : p.getImplementationVersion();
        return v != null ? v : impl.equals("rstreams") ? "this checkout" : "1.1.5";
    }

    private static String json(Map<String, Object> map) {
        StringBuilder out = new StringBuilder("{");
        Consumer<String> sep = s -> out.append(out.length() > 1 ? ", " : "").append(s);
        map.forEach((k, v) -> sep.accept("\"" + k + "\": " + (v instanceof String ? "\"" + v + "\"" : String.format(Locale.ROOT, "%s", v))));
        return out.append('}').toString();
    }
}
