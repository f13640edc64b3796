package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.PythonRstreams;
import io.rstreams.wire.Frame;
import io.rstreams.wire.FrameWriter;
import io.rstreams.wire.Limits;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/**
 * A stream whose elements grow (small ones, then ones of 1 MiB, written whole with a split
 * threshold of 1 MiB) with a window of 256: the server asks its publisher for a window sized by
 * the last small element, and the publisher answers it with large ones inside request(n). A
 * peer that reads gets every element (the large ones wait in the stream until the channel takes
 * them, instead of passing MAX_UNSENT in one turn); a peer that never reads is closed by
 * idleTimeout with the unsent bytes bounded near the channel's high-water mark.
 */
public class GrowingElementsTest {
    private static final int LARGE = 1 << 20;
    private static final String GROWING = "grow?n=1000&m=300";
    private RsioServer server;

    @BeforeClass(timeOut = 30_000)
    public void start() throws Exception {
        server = RsioServer.builder()
                .limits(Limits.DEFAULT.withSplitThreshold(LARGE))
                .route("grow", r -> Counters.growing(8, r.longParam("n", 1000), LARGE, r.longParam("m", 300)))
                .bind("tcp://127.0.0.1:0");
    }

    @AfterClass(alwaysRun = true)
    public void stop() {
        if (server != null) {
            server.close();
        }
    }

    @Test(timeOut = 120_000)
    public void aPythonClientReadingAWindowOf256GetsEveryElementAsTheyGrow() throws Exception {
        Path script = Files.createTempFile("growing", ".py");
        Files.writeString(script, String.join("\n",
                "import asyncio, sys",
                "import rstreams",
                "async def main(url, name):",
                "    count = total = 0",
                "    async with await rstreams.connect(url) as conn:",
                "        async for element in conn.publisher(name).iter_async(window=256):",
                "            count += 1",
                "            total += len(element)",
                "    print(count, total)",
                "asyncio.run(main(sys.argv[1], sys.argv[2]))",
                ""));
        try {
            PythonRstreams.Result result = PythonRstreams.run(100, script.toString(), server.url(), GROWING);
            assertEquals(result.status(), 0, result.output());
            assertEquals(result.output().strip(), "1300 " + (1000 * 8 + 300L * LARGE), result.output());
        } finally {
            Files.deleteIfExists(script);
        }
    }

    @Test(timeOut = 60_000)
    public void aPeerThatNeverReadsIsClosedWithTheUnsentBytesBounded() throws Exception {
        CompletableFuture<RsioConnection> accepted = new CompletableFuture<>();
        try (RsioServer local = RsioServer.builder()
                        .limits(Limits.DEFAULT.withSplitThreshold(LARGE))
                        .idleTimeout(Duration.ofSeconds(1))
                        .route("grow", r -> Counters.growing(8, r.longParam("n", 1000), LARGE, r.longParam("m", 300)))
                        .onConnection(c -> accepted.complete(c))
                        .bind("tcp://127.0.0.1:0");
                Socket socket = new Socket()) {
            socket.setReceiveBufferSize(4096);
            socket.connect(new InetSocketAddress("127.0.0.1", local.port()));
            OutputStream out = socket.getOutputStream();
            out.write(new byte[] {0x01, 0x00, 0x00}); // clientHello, no extensions
            // 256 granted at once: the first asked for is small, the next window mostly large
            out.write(FrameWriter.encode(new Frame.Subscribe("grow?n=100&m=300", 1, 256), 0));
            out.flush();
            RsioConnection conn = accepted.get(10, TimeUnit.SECONDS);
            conn.onClose().get(30, TimeUnit.SECONDS);
            Endpoint endpoint = conn.endpoint();
            String why = String.valueOf(endpoint.closedError());
            assertTrue(why.contains("idle timeout"), why);
            // the high-water mark (64 KiB), what one drain hands over before checking it (256 KiB)
            // and one element written whole: far below MAX_UNSENT, whatever the window held
            assertTrue(endpoint.peakUnsent() < 2L * LARGE, "at most " + endpoint.peakUnsent() + " bytes unsent at once");
        }
    }
}
