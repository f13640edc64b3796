package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.PythonRstreams;
import io.rstreams.testing.RepoPaths;
import io.rstreams.testing.TestSubscriber;
import io.rstreams.wire.Credentials;
import io.rstreams.wire.SubscribeMetadata;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.testng.annotations.Test;

/**
 * A channel's subscribe carries credentials of its own (PROTOCOL.md §15.4) and metadata (§18) from
 * the Java client, and the Java server authorizes it as any subscribe (§21.3): its authorize hook
 * sees the channel's name, principal and metadata, a refusal is onError code 4 and no input is
 * sent, and the channel factory sees the metadata. A Python server takes the Java client's
 * mark, subscribeCredentials, subscribeMetadata and subscribe in that order, and authorizes the
 * channel's own credentials with its metadata.
 */
public class ChannelAuthTest {
    private static final String UNAUTHORIZED = "unauthorized: subscribe to 'upper' is not allowed for this principal (PROTOCOL.md §15.4)";

    private static SubscribeMetadata tenant(String name) {
        return SubscribeMetadata.of(Map.of("x-tenant", name));
    }

    /** Two elements, counting the subscribes to it (the channel's input is subscribed at the first inputRequest). */
    private static Flow.Publisher<byte[]> input(AtomicInteger subscribed) {
        return s -> {
            subscribed.incrementAndGet();
            Counters.repeat("a", 2).subscribe(new Flow.Subscriber<String>() {
                @Override
                public void onSubscribe(Flow.Subscription subscription) {
                    s.onSubscribe(subscription);
                }

                @Override
                public void onNext(String item) {
                    s.onNext(item.getBytes(StandardCharsets.UTF_8));
                }

                @Override
                public void onError(Throwable t) {
                    s.onError(t);
                }

                @Override
                public void onComplete() {
                    s.onComplete();
                }
            });
        };
    }

    /** The output's elements as text, or its error. */
    private static Object outcome(Flow.Publisher<byte[]> output) throws Exception {
        TestSubscriber<byte[]> sub = new TestSubscriber<>();
        output.subscribe(sub);
        sub.request(Long.MAX_VALUE);
        Throwable error = sub.awaitTerminal();
        if (error != null) {
            return error;
        }
        List<String> got = new ArrayList<>();
        for (byte[] b : sub.all()) {
            got.add(new String(b, StandardCharsets.UTF_8));
        }
        return got;
    }

    private static void assertRefused(Object outcome, long code, String text) {
        assertTrue(outcome instanceof RemoteStreamException, String.valueOf(outcome));
        RemoteStreamException e = (RemoteStreamException) outcome;
        assertEquals(e.code().getAsLong(), code);
        assertTrue(e.getMessage().endsWith(text), e.getMessage());
    }

    @Test(timeOut = 60_000)
    public void aChannelsCredentialsAndMetadataAreAuthorizedAndReachItsFactory() throws Exception {
        List<String> asked = new ArrayList<>();
        try (RsioServer server = RsioServer.builder()
                        .authenticate(c -> Set.of("writer", "reader").contains(c.token()))
                        .authorize((credentials, name, metadata) -> {
                            synchronized (asked) {
                                asked.add(credentials.token() + " " + name + " " + metadata.texts());
                            }
                            return "writer".equals(credentials.token()) && "acme".equals(metadata.text("x-tenant"));
                        })
                        .channel("upper", (input, request) -> Encoding.mapped(input, b -> (new String(b, StandardCharsets.UTF_8)
                                .toUpperCase() + ":" + request.metadata().text("x-tenant")).getBytes(StandardCharsets.UTF_8)))
                        .bind("tcp://127.0.0.1:0");
                RsioClient client = RsioClient.builder().token("writer").build();
                RsioConnection conn = client.connect(server.url()).get(10, TimeUnit.SECONDS)) {
            AtomicInteger subscribed = new AtomicInteger();
            assertEquals(outcome(conn.channel("upper", input(subscribed), Codec.BYTES, Codec.BYTES, tenant("acme"))), List.of("A:acme", "A:acme"));
            assertEquals(subscribed.get(), 1);

            // the channel's own credentials are authorized instead of the connection's; no input is sent when refused
            assertRefused(outcome(conn.channel("upper", input(subscribed), Codec.BYTES, Codec.BYTES, Credentials.token("reader"),
                    tenant("acme"), false)), 4, UNAUTHORIZED);
            assertRefused(outcome(conn.channel("upper", input(subscribed), Codec.BYTES, Codec.BYTES, Credentials.token("nobody"),
                    tenant("acme"), true)), 3, "unauthenticated: subscribe to 'upper' needs valid credentials (PROTOCOL.md §15.4)");
            assertRefused(outcome(conn.channel("upper", input(subscribed), Codec.BYTES, Codec.BYTES, tenant("other"))), 4, UNAUTHORIZED);
            assertRefused(outcome(conn.channel("upper?x=1", input(subscribed))), 4,
                    "unauthorized: subscribe to 'upper' is not allowed for this principal (PROTOCOL.md §15.4)");
            assertEquals(subscribed.get(), 1, "a refused channel's input was subscribed");
            assertEquals(outcome(conn.channel("upper", input(subscribed), Codec.BYTES, Codec.BYTES, null, tenant("acme"), true)),
                    List.of("A:acme", "A:acme"));
            synchronized (asked) {
                assertEquals(asked, List.of("writer upper {x-tenant=acme}", "reader upper {x-tenant=acme}",
                        "writer upper {x-tenant=other}", "writer upper?x=1 {}", "writer upper {x-tenant=acme}"));
            }
            assertTrue(conn.isOpen());
        }
    }

    @Test(timeOut = 60_000)
    public void aPythonServerAuthorizesAJavaClientsChannelByItsOwnCredentials() throws Exception {
        try (PythonRstreams server = PythonRstreams.script(RepoPaths.root().resolve("java/src/test/resources/python/channels_server.py"),
                        "tcp://127.0.0.1:0", "--auth");
                RsioClient client = RsioClient.builder().token("reader").build();
                RsioConnection conn = client.connect(server.url()).get(10, TimeUnit.SECONDS)) {
            AtomicInteger subscribed = new AtomicInteger();
            assertEquals(outcome(conn.channel("upper", input(subscribed), Codec.BYTES, Codec.BYTES, Credentials.token("writer"),
                    tenant("acme"), true)), List.of("A", "A"));
            assertRefused(outcome(conn.channel("upper", input(subscribed), Codec.BYTES, Codec.BYTES, tenant("acme"))), 4, UNAUTHORIZED);
            assertEquals(subscribed.get(), 1, "a refused channel's input was subscribed");
            assertTrue(conn.isOpen());
            server.awaitOutput(o -> o.contains("asked writer upper x-tenant=acme"), 10); // its output comes through a pipe of its own
        }
    }
}
