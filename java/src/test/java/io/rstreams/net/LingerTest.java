package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.RawSockets;
import io.rstreams.wire.Frame;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.testng.annotations.Test;

/**
 * After an error goodbye the server reads and discards the peer's input for the linger time
 * (§10), so that the peer reads the goodbye; a peer that floods meanwhile is cut off once
 * {@link Endpoint#LINGER_BYTES} are discarded, as rstreams' LINGER_BYTES. Before, the I/O thread
 * read and dropped all it could for the whole 2 s: about 200 MB from one peer on loopback
 * (tests/conformance/test_hostile_polyglot.py found it).
 */
public class LingerTest {
    private static final long FLOOD = 512L << 20; // what the peer tries to write after its violation

    @Test(timeOut = 60_000)
    public void aPeerFloodingAfterItsErrorIsCutOffOnceTheLingerBytesAreDiscarded() throws Exception {
        try (RsioServer server = RsioServer.builder().bind("tcp://127.0.0.1:0");
             Socket socket = RawSockets.connect(server.port())) {
            OutputStream out = socket.getOutputStream();
            out.write(new byte[] {0x01, 0x00, 0x00, 0x0E}); // a clientHello, then an unknown type byte (§3)
            AtomicLong written = new AtomicLong();
            Thread flood = new Thread(() -> {
                byte[] chunk = new byte[1 << 20];
                try {
                    while (written.get() < FLOOD) {
                        out.write(chunk);
                        written.addAndGet(chunk.length);
                    }
                } catch (IOException reset) {
                    // the server closed
                }
            });
            flood.start();
            List<Frame> frames = RawSockets.readToTheEnd(socket);
            flood.join();
            assertEquals(RawSockets.lastGoodbye(frames), "unknown message type 0x0e (PROTOCOL.md §3)");
            // LINGER_BYTES discarded, plus what the kernel's buffers of both ends held
            assertTrue(written.get() < 64L << 20, "the server took " + written.get() + " bytes after its goodbye");
        }
    }
}
