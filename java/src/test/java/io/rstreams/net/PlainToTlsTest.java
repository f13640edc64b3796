package io.rstreams.net;

import static org.testng.Assert.assertNotEquals;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.PythonRstreams;
import io.rstreams.testing.TlsFixture;
import org.testng.annotations.Test;

/**
 * The Python client pointed with {@code ws://} at this binding's {@code wss://} server is told
 * that the server may speak TLS there, by an error naming {@code wss://} (tests/net/
 * test_websocket_tls_answer.py: a server answering with a TLS record is named as one).
 */
public class PlainToTlsTest {
    @Test(timeOut = 120_000)
    public void aPythonWsClientToAJavaWssServerIsToldToUseWss() throws Exception {
        try (RsioServer server = RsioServer.builder().route("counter", Codec.INT64, r -> Counters.range(0, 3))
                .tls(TlsFixture.get().server).bind("wss://127.0.0.1:0/rsio")) {
            String plain = server.url().replace("wss://", "ws://");
            PythonRstreams.Result result = PythonRstreams.run(60, "-m", "rstreams.cli", "subscribe", plain, "counter",
                    "--codec", "int64");
            assertNotEquals(result.status(), 0, result.output());
            // Netty's TLS server closes without a word (no alert): the hint of a server that sends no
            // HTTP names wss://; one that answers with a TLS record gets the wss:// URL itself
            assertTrue(result.output().contains("wss://"), result.output());
        }
    }
}
