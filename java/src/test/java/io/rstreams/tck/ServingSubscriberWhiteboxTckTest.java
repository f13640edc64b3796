package io.rstreams.tck;

import io.rstreams.testing.Holding;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Flow;
import org.reactivestreams.tck.SubscriberWhiteboxVerification.SubscriberPuppet;
import org.reactivestreams.tck.SubscriberWhiteboxVerification.WhiteboxSubscriberProbe;
import org.reactivestreams.tck.flow.FlowSubscriberWhiteboxVerification;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;

/**
 * The official SubscriberWhiteboxVerification against the Java server's serving-side subscriber.
 * The probe sees its signals; the puppet's requests and cancels are made by the remote Java
 * client and reach that subscriber over the wire, as in real use.
 */
public class ServingSubscriberWhiteboxTckTest extends FlowSubscriberWhiteboxVerification<byte[]> {
    private ServingSide side;

    public ServingSubscriberWhiteboxTckTest() {
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
    protected Flow.Subscriber<byte[]> createFlowSubscriber(WhiteboxSubscriberProbe<byte[]> probe) {
        Holding<byte[]> remote = new Holding<>();
        Flow.Subscriber<byte[]> serving = (Flow.Subscriber<byte[]>) side.open(remote);
        return new Flow.Subscriber<>() {
            @Override
            public void onSubscribe(Flow.Subscription s) {
                serving.onSubscribe(s);
                probe.registerOnSubscribe(new SubscriberPuppet() {
                    @Override
                    public void triggerRequest(long elements) {
                        remote.subscription.request(elements);
                    }

                    @Override
                    public void signalCancel() {
                        remote.subscription.cancel();
                    }
                });
            }

            @Override
            public void onNext(byte[] element) {
                serving.onNext(element);
                probe.registerOnNext(element);
            }

            @Override
            public void onError(Throwable error) {
                serving.onError(error);
                probe.registerOnError(error);
            }

            @Override
            public void onComplete() {
                serving.onComplete();
                probe.registerOnComplete();
            }
        };
    }

    @Override
    public byte[] createElement(int element) {
        return Integer.toString(element).getBytes(StandardCharsets.UTF_8);
    }
}
