package io.rstreams.wire;

import static org.testng.Assert.assertTrue;

import io.rstreams.testing.Hex;
import java.nio.charset.StandardCharsets;
import java.util.Set;
import org.testng.annotations.Test;

/**
 * The refusals of a subscribe that breaks a limit (PROTOCOL.md §6.2, §11; codes 5 and 7) send the
 * same text in Java, Python and JavaScript, checked in the same order (initialDemand, then the
 * name's length, then max_subscriptions; docs/security.md): js limit-refusals.test.mjs sends and
 * reads them from its own server and {@code rstreams serve}, tests/wire/test_connection_subscribe.py
 * from Python's.
 */
public class LimitRefusalsTest {
    private static String sent(Connection server, byte[] in) {
        server.receiveData(in, 0, in.length);
        server.events();
        return new String(server.dataToSend(), StandardCharsets.UTF_8);
    }

    private static byte[] subscribe(String name, long id) {
        return FrameWriter.encode(new Frame.Subscribe(name, id, 1), 0);
    }

    @Test(timeOut = 10_000)
    public void theTextsAndTheirOrderAreEveryBindings() {
        ConnectionTest.Pair p = new ConnectionTest.Pair(Limits.DEFAULT, Set.of(), Set.of());
        p.pump();
        Connection server = p.server;
        String longName = "x".repeat(Limits.DEFAULT.maxNameLength() + 1);
        // a long name with initialDemand 2**63: the demand's refusal
        String demand = sent(server, Hex.decode("04 81 08 " + "78 ".repeat(1025) + "01 80 80 80 80 80 80 80 80 80 01"));
        assertTrue(demand.contains("rule 3.9: initialDemand 9223372036854775808 is above 2**63 - 1 (PROTOCOL.md §6.2)"), demand);
        String name = sent(server, subscribe(longName, 2));
        assertTrue(name.contains("refused: publisher name longer than max_name_length=1024 bytes (PROTOCOL.md §11)"), name);
        for (long id = 3; id < 3 + Limits.DEFAULT.maxSubscriptions(); id++) {
            sent(server, subscribe("p", id));
        }
        String many = sent(server, subscribe("p", 3 + Limits.DEFAULT.maxSubscriptions()));
        assertTrue(many.contains("refused: at most max_subscriptions=1024 subscriptions per connection (PROTOCOL.md §11)"), many);
    }
}
