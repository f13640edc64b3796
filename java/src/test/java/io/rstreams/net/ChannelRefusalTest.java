package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.PythonRstreams;
import org.testng.annotations.Test;

/**
 * A Java server that offers no channel (PROTOCOL.md §21) refuses a Python client's channel as
 * unknown (§21.3, code 2), and its connection goes on.
 */
public class ChannelRefusalTest {
    /** Opens channel {@code upper?lang=en} on URL with one input element, prints how it ended, then reads counter?to=2. */
    private static final String CLIENT = String.join("\n",
            "import asyncio, sys",
            "import rstreams",
            "from rstreams.net import connect",
            "async def main(url):",
            "    async with await connect(url) as conn:",
            "        try:",
            "            print('output', await rstreams.from_publisher(conn.channel('upper?lang=en', rstreams.from_iterable([b'a']))).collect())",
            "        except Exception as error:",
            "            print('refused', type(error).__name__, getattr(error, 'code', None), error)",
            "        print('then', await rstreams.from_publisher(conn.publisher('counter?to=2')).collect())",
            "asyncio.run(main(sys.argv[1]))");

    @Test(timeOut = 120_000)
    public void aChannelOpenedOnTheJavaServerIsRefusedAsUnknown() throws Exception {
        PythonRstreams.python();
        try (RsioServer server = RsioServer.builder()
                .route("counter", Codec.UTF8, r -> Counters.repeat("x", r.longParam("to", 1)))
                .bind("tcp://127.0.0.1:0")) {
            PythonRstreams.Result result = PythonRstreams.run(100, "-c", CLIENT, server.url());
            assertEquals(result.status(), 0, result.output());
            assertTrue(result.output().contains("refused UnknownPublisher 2 remote publisher 'upper?lang=en' failed: "
                    + "no channel named 'upper' (PROTOCOL.md §21.3)"),
                    result.output());
            assertTrue(result.output().contains("then ['x', 'x']"), result.output()); // text: the route states text/plain (§17)
        }
    }
}
