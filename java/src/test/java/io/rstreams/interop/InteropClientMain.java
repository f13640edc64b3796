package io.rstreams.interop;

import io.rstreams.net.Codec;
import io.rstreams.net.RemoteStreamException;
import io.rstreams.net.RsioClient;
import io.rstreams.net.RsioConnection;
import io.rstreams.testing.Json;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The Java client's driver for the interop matrix (tests/interop): {@code java ... InteropClientMain PLAN.json}.
 *
 * <p>The plan is {@code {"cases": [{"id", "url", "token", "wait", "pids", "streams": [{"name", "script", "codec"}]}]}}; each
 * case is one connection (with the token, if any) on which the streams are subscribed one after the
 * other, each following its script: {@code rN} request N, {@code wN} wait until N elements arrived,
 * {@code c} cancel, {@code t} wait for the terminal signal. What the subscribers see is printed as one
 * JSON object per line, each with the case's id: {@code connected}, {@code connect-failed}, {@code next}
 * (size, sha256, hex up to 64 bytes, value for the int64 codec), {@code complete}, {@code error} (the
 * publisher's onError text), {@code closed} (the connection ended), {@code timeout}, {@code done}; last
 * {@code {"event": "exit"}}.
 *
 * <p>Each wait (the connection, onSubscribe, a count, the end) is a hang guard of the case's {@code wait}
 * seconds ({@link #WAIT_SECONDS} unless the plan says) of own time ({@link OwnTime}: wall time less what
 * the threads of this process and of the case's server, {@code pids}, waited for a CPU), not of wall
 * time: on a loaded machine a server that is served late is not taken for one that hangs.
 */
public final class InteropClientMain {
    private static final double WAIT_SECONDS = 20;

    private InteropClientMain() {}

    public static void main(String[] args) throws Exception {
        Map<?, ?> plan = (Map<?, ?>) Json.parse(Files.readString(Path.of(args[0])));
        Map<String, RsioClient> clients = new LinkedHashMap<>();
        try {
            for (Object c : (List<?>) plan.get("cases")) {
                Map<?, ?> spec = (Map<?, ?>) c;
                String token = (String) spec.get("token");
                RsioClient client = clients.computeIfAbsent(token == null ? "" : token, t -> {
                    // (the client's own handshake timer of wall time off: the bound is the case's wait)
                    RsioClient.Builder b = RsioClient.builder().handshakeTimeout(null);
                    return (t.isEmpty() ? b : b.token(t)).build();
                });
                runCase(client, spec);
            }
        } finally {
            clients.values().forEach(RsioClient::close);
        }
        emit(null, -1, "exit", Map.of());
        System.out.flush();
    }

    private static void runCase(RsioClient client, Map<?, ?> spec) throws InterruptedException {
        String id = (String) spec.get("id");
        double limit = spec.get("wait") instanceof Number w ? w.doubleValue() : WAIT_SECONDS;
        List<Long> pids = spec.get("pids") instanceof List<?> l ? l.stream().map(p -> ((Number) p).longValue()).toList() : List.of();
        RsioConnection conn;
        try {
            conn = connect(client.connect((String) spec.get("url")), limit, pids);
        } catch (ExecutionException | TimeoutException e) {
            emit(id, -1, "connect-failed", Map.of("message", String.valueOf(e.getCause() != null ? e.getCause() : e)));
            emit(id, -1, "done", Map.of());
            return;
        }
        emit(id, -1, "connected", Map.of());
        try {
            int k = 0;
            for (Object s : (List<?>) spec.get("streams")) {
                Map<?, ?> stream = (Map<?, ?>) s;
                if (!runStream(conn, id, k++, stream, limit, pids)) {
                    break;
                }
            }
        } finally {
            conn.close();
        }
        emit(id, -1, "done", Map.of());
    }

    /** The connection, or a TimeoutException once it took {@code limit} own seconds. */
    private static RsioConnection connect(CompletableFuture<RsioConnection> connecting, double limit, List<Long> pids)
            throws InterruptedException, ExecutionException, TimeoutException {
        OwnTime clock = OwnTime.start(limit, pids);
        while (true) {
            long look = clock.nextLook();
            if (look == 0) {
                throw new TimeoutException("not connected within " + limit + " s of own time");
            }
            try {
                return connecting.get(look, TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                // (a look at the clock is due)
            }
        }
    }

    /** Runs one stream's script; false if a wait timed out (the case stops there). */
    private static boolean runStream(RsioConnection conn, String id, int k, Map<?, ?> stream, double limit, List<Long> pids)
            throws InterruptedException {
        boolean int64 = "int64".equals(stream.get("codec"));
        Recorder r = new Recorder(id, k, int64, limit, pids);
        if (int64) {
            conn.publisher((String) stream.get("name"), Codec.INT64).subscribe(new Flow.Subscriber<Long>() {
                @Override
                public void onSubscribe(Flow.Subscription subscription) {
                    r.onSubscribe(subscription);
                }

                @Override
                public void onNext(Long item) {
                    r.next(Codec.INT64.encode(item), item);
                }

                @Override
                public void onError(Throwable throwable) {
                    r.onError(throwable);
                }

                @Override
                public void onComplete() {
                    r.onComplete();
                }
            });
        } else {
            conn.publisher((String) stream.get("name")).subscribe(r);
        }
        for (String step : ((String) stream.get("script")).trim().split("\\s+")) {
            char kind = step.charAt(0);
            long n = step.length() > 1 ? Long.parseLong(step.substring(1)) : 0;
            boolean ok = true;
            switch (kind) {
                case 'r' -> r.subscription().request(n);
                case 'c' -> r.subscription().cancel();
                case 'w' -> ok = r.await(n);
                case 't' -> ok = r.await(Long.MAX_VALUE);
                default -> throw new IllegalArgumentException("bad script step " + step);
            }
            if (!ok) {
                emit(id, k, "timeout", Map.of("step", step));
                return false;
            }
        }
        return true;
    }

    /** A subscriber that prints what it sees and lets the script wait for a count or the end. */
    private static final class Recorder implements Flow.Subscriber<byte[]> {
        private final String id;
        private final int k;
        private final boolean int64;
        private final double limit;
        private final List<Long> pids;
        private Flow.Subscription subscription;
        private long count;
        private boolean ended;

        Recorder(String id, int k, boolean int64, double limit, List<Long> pids) {
            this.id = id;
            this.k = k;
            this.int64 = int64;
            this.limit = limit;
            this.pids = pids;
        }

        synchronized Flow.Subscription subscription() throws InterruptedException {
            if (!OwnTime.await(this, () -> subscription != null, limit, pids)) {
                throw new IllegalStateException("no onSubscribe within " + limit + " s of own time");
            }
            return subscription;
        }

        /** Waits until {@code n} elements arrived in all or the stream ended; false on timeout. */
        synchronized boolean await(long n) throws InterruptedException {
            return OwnTime.await(this, () -> ended || count >= n, limit, pids);
        }

        @Override
        public synchronized void onSubscribe(Flow.Subscription s) {
            subscription = s;
            notifyAll();
        }

        @Override
        public void onNext(byte[] item) {
            next(item, null);
        }

        synchronized void next(byte[] bytes, Long value) {
            Map<String, Object> fields = new LinkedHashMap<>();
            fields.put("size", bytes.length);
            fields.put("sha256", sha256(bytes));
            if (bytes.length <= 64) {
                fields.put("hex", HexFormat.of().formatHex(bytes));
            }
            if (int64 && value != null) {
                fields.put("value", value);
            }
            emit(id, k, "next", fields);
            count++;
            notifyAll();
        }

        @Override
        public synchronized void onError(Throwable error) {
            if (error instanceof RemoteStreamException) {
                emit(id, k, "error", Map.of("message", String.valueOf(error.getMessage())));
            } else {
                emit(id, k, "closed", Map.of("message", error.getClass().getSimpleName() + ": " + error.getMessage()));
            }
            ended = true;
            notifyAll();
        }

        @Override
        public synchronized void onComplete() {
            emit(id, k, "complete", Map.of());
            ended = true;
            notifyAll();
        }
    }

    private static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static synchronized void emit(String id, int stream, String event, Map<String, ?> fields) {
        StringBuilder out = new StringBuilder("{");
        if (id != null) {
            out.append("\"case\": ").append(Json.quote(id)).append(", ");
        }
        if (stream >= 0) {
            out.append("\"stream\": ").append(stream).append(", ");
        }
        out.append("\"event\": ").append(Json.quote(event));
        for (Map.Entry<String, ?> f : fields.entrySet()) {
            Object v = f.getValue();
            out.append(", ").append(Json.quote(f.getKey())).append(": ").append(v instanceof Number ? v.toString() : Json.quote(String.valueOf(v)));
        }
        System.out.println(out.append('}'));
    }
}
