package io.rstreams.tck;

import io.rstreams.testing.Holding;
import java.util.concurrent.Flow;
import org.reactivestreams.tck.flow.FlowSubscriberBlackboxVerification;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;

/**
 * The official SubscriberBlackboxVerification against the subscriber the Java server puts on a
 * local publisher, with a remote Java client that requested Long.MAX_VALUE on the other end.
 */
public class ServingSubscriberBlackboxTckTest extends FlowSubscriberBlackboxVerification<byte[]> {
    private ServingSide side;

    public ServingSubscriberBlackboxTckTest() {
        super(TckEnvironment.create());
    }

    @BeforeClass
    public void start() throws Exception {
        side = new ServingSide();
    }

    @AfterClass(alwaysRun = true)
    public void stop() {
        if (side != null) {
            side.close();
        }
    }

    @Override
    @SuppressWarnings("unchecked")
    public Flow.Subscriber<byte[]> createFlowSubscriber() {
        return (Flow.Subscriber<byte[]>) side.open(new Holding<>(Long.MAX_VALUE));
    }

    @Override
    public byte[] createElement(int element) {
        return Integer.toString(element).getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }
}
