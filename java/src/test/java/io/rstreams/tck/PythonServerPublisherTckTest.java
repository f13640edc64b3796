package io.rstreams.tck;

import io.rstreams.net.Codec;
import io.rstreams.net.RsioClient;
import io.rstreams.net.RsioConnection;
import io.rstreams.testing.Closing;
import io.rstreams.testing.PythonRstreams;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import org.reactivestreams.tck.flow.FlowPublisherVerification;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;

/**
 * The official reactive-streams-tck-flow PublisherVerification against the Java client's
 * remote publisher, connected over TCP to a live Python server ({@code rstreams serve}) and
 * its built-in {@code counter} (UTF-8 text).
 */
public class PythonServerPublisherTckTest extends FlowPublisherVerification<String> {
    /** Above this many elements the counter is asked to be endless (no {@code to}). */
    private static final long ENDLESS = 1L << 53;
    private PythonRstreams server;
    private RsioClient client;
    private RsioConnection conn;

    public PythonServerPublisherTckTest() {
        super(TckEnvironment.create(), TckEnvironment.GC_TIMEOUT_MILLIS);
    }

    @BeforeClass
    public void start() throws Exception {
        server = PythonRstreams.serve();
        client = RsioClient.builder().build();
        conn = client.connect(server.url()).get(10, TimeUnit.SECONDS);
    }

    @AfterClass(alwaysRun = true)
    public void stop() throws Exception {
        Closing.all(conn, client, server);
    }

    @Override
    public Flow.Publisher<String> createFlowPublisher(long elements) {
        return conn.publisher(elements >= ENDLESS ? "counter" : "counter?to=" + elements, Codec.UTF8);
    }

    @Override
    public Flow.Publisher<String> createFailedFlowPublisher() {
        return conn.publisher("no/such/publisher", Codec.UTF8);
    }
}
