package io.rstreams.conformance;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.rstreams.net.RsioServer;
import io.rstreams.testing.PythonRstreams;
import java.time.Duration;
import org.testng.annotations.Test;

/**
 * rstreams' own conformance suite ({@code python -m rstreams.conformance URL}, docs/conformance.md)
 * run against the Java server over TCP, as a real process speaking raw bytes.
 */
public class ConformanceSuiteTest {

    @Test(timeOut = 300_000)
    public void everyCasePassesOverTcp() throws Exception {
        PythonRstreams.python();
        try (RsioServer server = new ConformancePublishers().addTo(RsioServer.builder()).bind("tcp://127.0.0.1:0")) {
            PythonRstreams.Result result = PythonRstreams.run(280, "-m", "rstreams.conformance", server.url(),
                    "--junit", "target/conformance-tcp.xml");
            assertEquals(result.status(), 0, "conformance cases failed against " + server.url() + ":\n" + result.output());
            assertTrue(result.output().contains("total                          180     0    14"), result.output());
        }
    }

    /** The extension cases that need an idle timeout (§14.2), against a server that closes idle peers after 1 s. */
    @Test(timeOut = 120_000)
    public void idleTimeoutCasesPass() throws Exception {
        PythonRstreams.python();
        try (RsioServer server = new ConformancePublishers().addTo(RsioServer.builder())
                .idleTimeout(Duration.ofSeconds(1))
                .bind("tcp://127.0.0.1:0")) {
            PythonRstreams.Result result = PythonRstreams.run(100, "-m", "rstreams.conformance", server.url(),
                    "-k", "ex.", "--idle-timeout", "1", "--junit", "target/conformance-tcp-idle.xml");
            assertEquals(result.status(), 0, "extension cases failed against " + server.url() + ":\n" + result.output());
            assertTrue(!result.output().contains("skip  ex.idle_timeout") && !result.output().contains("skip  ex.pings_keep_alive"),
                    "the idle-timeout cases must run, not skip:\n" + result.output());
        }
    }
}
