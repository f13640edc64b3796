package io.rstreams.net;

import static org.testng.Assert.assertEquals;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.rstreams.testing.Holding;
import io.rstreams.wire.Connection;
import io.rstreams.wire.Frame;
import io.rstreams.wire.FrameParser;
import io.rstreams.wire.FrameType;
import io.rstreams.wire.FrameWriter;
import io.rstreams.wire.Limits;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import org.testng.annotations.Test;

/**
 * A channel factory's input (PROTOCOL.md §21.4): the requests its subscriber makes in one turn
 * of the I/O thread go out as one inputRequest, their sum, as rstreams coalesces them per loop
 * turn; a later turn's requests go out in an inputRequest of their own.
 */
public class ChannelInputRequestTest {

    /** What the endpoint wrote, as inputRequest payloads in hex (subscriber id, then demand). */
    private static List<String> inputRequests(EmbeddedChannel channel, FrameParser parser) throws Exception {
        channel.runPendingTasks();
        List<String> requests = new ArrayList<>();
        for (ByteBuf b = channel.readOutbound(); b != null; b = channel.readOutbound()) {
            byte[] bytes = new byte[b.readableBytes()];
            b.readBytes(bytes);
            b.release();
            parser.feed(bytes, 0, bytes.length);
            for (Frame f : parser.parseAll()) {
                if (f instanceof Frame.Extension x && x.type() == FrameType.INPUT_REQUEST) {
                    requests.add(HexFormat.of().formatHex(x.payload()));
                }
            }
        }
        return requests;
    }

    @Test(timeOut = 10_000)
    public void theRequestsOfOneTurnGoOutAsOneInputRequest() throws Exception {
        Holding<byte[]> input = new Holding<>(1, 2, 4); // three requests in one turn
        Routes routes = new Routes();
        routes.addChannel("c", 0, null, (in, request) -> {
            in.subscribe(input);
            return Counters.silent(); // an output that never ends
        });
        Endpoint server = new Endpoint(Connection.Side.SERVER,
                new Endpoint.Options(Limits.DEFAULT, routes, null, null, null, null, null, null, null, null, true));
        EmbeddedChannel channel = new EmbeddedChannel(server);
        for (Frame f : List.of(new Frame.Hello(false, 0, List.of(FrameType.CHANNELS)),
                new Frame.Extension(FrameType.CHANNEL, new byte[] {1}), new Frame.Subscribe("c", 1, 0))) {
            channel.writeInbound(Unpooled.wrappedBuffer(FrameWriter.encode(f, 0)));
        }
        FrameParser parser = new FrameParser(Limits.DEFAULT);
        assertEquals(inputRequests(channel, parser), List.of("0107"), "request(1), (2), (4) in one turn: one inputRequest(1, 7)");
        input.subscription.request(3);
        input.subscription.request(Long.MAX_VALUE); // saturates at unbounded (§6.1)
        assertEquals(inputRequests(channel, parser), List.of("01ffffffffffffffff7f"), "a later turn's requests: their own inputRequest");
        channel.finishAndReleaseAll();
    }
}
