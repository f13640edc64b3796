package io.rstreams.tck;

import io.rstreams.net.Codec;
import io.rstreams.net.Counters;
import io.rstreams.net.RsioClient;
import io.rstreams.net.RsioConnection;
import io.rstreams.net.RsioServer;
import io.rstreams.testing.Closing;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import org.reactivestreams.tck.flow.FlowPublisherVerification;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;

/**
 * The official reactive-streams-tck-flow PublisherVerification against a channel (PROTOCOL.md §21)
 * between the two Java ends over TCP: the client's {@code conn.channel(...)} output, whose elements
 * are the server's channel input ({@code net.ChannelInput}) served back as the output, so both new
 * publishers of the channel are under the rules, with the input sent within the demand granted.
 */
public class ChannelPublisherTckTest extends FlowPublisherVerification<Long> {
    private RsioServer server;
    private RsioClient client;
    private RsioConnection conn;

    public ChannelPublisherTckTest() {
        super(TckEnvironment.create(), TckEnvironment.GC_TIMEOUT_MILLIS);
    }

    @BeforeClass
    public void start() throws Exception {
        server = RsioServer.builder()
                .channel("echo", Codec.INT64, (input, request) -> input)
                .bind("tcp://127.0.0.1:0");
        client = RsioClient.builder().build();
        conn = client.connect(server.url()).get(10, TimeUnit.SECONDS);
    }

    @AfterClass(alwaysRun = true)
    public void stop() throws Exception {
        Closing.all(conn, client, server);
    }

    @Override
    public Flow.Publisher<Long> createFlowPublisher(long elements) {
        return conn.channel("echo", Counters.range(0, elements), Codec.INT64);
    }

    @Override
    public Flow.Publisher<Long> createFailedFlowPublisher() {
        // refused with onError after onSubscribe (rule 1.9): no channel of that name (§21.3)
        return conn.channel("no/such/channel", Counters.range(0, 1), Codec.INT64);
    }
}
