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
 * The official reactive-streams-tck-flow PublisherVerification against the Java client's
 * remote publisher, connected over TCP to the Java server's {@code counter} (packed int64).
 */
public class JavaServerPublisherTckTest extends FlowPublisherVerification<Long> {
    private RsioServer server;
    private RsioClient client;
    private RsioConnection conn;

    public JavaServerPublisherTckTest() {
        super(TckEnvironment.create(), TckEnvironment.GC_TIMEOUT_MILLIS);
    }

    @BeforeClass
    public void start() throws Exception {
        server = RsioServer.builder()
                .route("counter", Codec.INT64, r -> Counters.range(0, r.longParam("to", Long.MAX_VALUE)))
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
        return conn.publisher("counter?to=" + elements, Codec.INT64);
    }

    @Override
    public Flow.Publisher<Long> createFailedFlowPublisher() {
        return conn.publisher("no/such/publisher", Codec.INT64); // refused with onError after onSubscribe (rule 1.9)
    }
}
