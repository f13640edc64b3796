package io.rstreams.conformance;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.rstreams.net.RsioServer;
import io.rstreams.testing.PythonRstreams;
import io.rstreams.testing.TlsFixture;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.testng.annotations.DataProvider;
import org.testng.annotations.Test;

/**
 * rstreams' own conformance suite ({@code python -m rstreams.conformance URL}, docs/conformance.md)
 * run against the Java server, as a separate process speaking raw bytes, over TCP, TLS,
 * WebSocket and WebSocket over TLS.
 */
public class ConformanceSuiteTest {
    /**
     * Without resume: every case but the 37 of auth, resume, the idle timeout (run separately)
     * and the extensions this server does not offer (content types, metadata, error codes,
     * messages, channels).
     */
    private static final String EXPECTED_TOTAL = "total                          182     0    37";
    /** With resume on (TCP, TLS): the 8 resume cases run too. */
    private static final String EXPECTED_TOTAL_RESUME = "total                          190     0    29";

    @DataProvider(name = "transports")
    public Object[][] transports() {
        return new Object[][] {{"tcp://127.0.0.1:0"}, {"tls://127.0.0.1:0"}, {"ws://127.0.0.1:0/rsio"}, {"wss://127.0.0.1:0/rsio"}};
    }

    private static RsioServer.Builder builder(String where) throws Exception {
        RsioServer.Builder b = new ConformancePublishers().addTo(RsioServer.builder());
        if (where.startsWith("tls") || where.startsWith("wss")) {
            b.tls(TlsFixture.get().server);
        }
        return b.resume(resumes(where));
    }

    /** Resume is on over TCP and TLS, off over WebSocket (the suite's resume cases speak TCP and TLS). */
    private static boolean resumes(String where) {
        return where.startsWith("tcp") || where.startsWith("tls");
    }

    private static List<String> tlsArgs(String url) throws Exception {
        List<String> args = new ArrayList<>();
        if (url.startsWith("tls") || url.startsWith("wss")) {
            args.add("--cafile");
            args.add(TlsFixture.get().pem.toString());
        }
        return args;
    }

    @Test(dataProvider = "transports", timeOut = 300_000)
    public void everyOfferedCasePasses(String where) throws Exception {
        PythonRstreams.python();
        try (RsioServer server = builder(where).bind(where)) {
            List<String> args = new ArrayList<>(List.of("-m", "rstreams.conformance", server.url(),
                    "--junit", "target/conformance-" + where.substring(0, where.indexOf(':')) + ".xml"));
            args.addAll(tlsArgs(server.url()));
            PythonRstreams.Result result = PythonRstreams.run(280, args.toArray(String[]::new));
            assertEquals(result.status(), 0, "conformance cases failed against " + server.url() + ":\n" + result.output());
            assertTrue(result.output().contains(resumes(where) ? EXPECTED_TOTAL_RESUME : EXPECTED_TOTAL), result.output());
        }
    }

    /** The auth cases (§15), against a server that requires a token. */
    @Test(timeOut = 120_000)
    public void authCasesPassAgainstAServerRequiringAToken() throws Exception {
        PythonRstreams.python();
        try (RsioServer server = builder("tcp").token("conformance-token").bind("tcp://127.0.0.1:0")) {
            PythonRstreams.Result result = PythonRstreams.run(100, "-m", "rstreams.conformance", server.url(),
                    "-k", "ex.auth_", "--token", "conformance-token", "--publisher", "range", "--junit", "target/conformance-tcp-auth.xml");
            assertEquals(result.status(), 0, "auth cases failed against " + server.url() + ":\n" + result.output());
            assertTrue(result.output().contains("total                           10     0     0"), result.output());
        }
    }

    /** The extension cases that need an idle timeout (§14.2), against a server that closes idle peers after 1 s. */
    @Test(timeOut = 120_000)
    public void idleTimeoutCasesPass() throws Exception {
        PythonRstreams.python();
        try (RsioServer server = builder("tcp").idleTimeout(Duration.ofSeconds(1)).bind("tcp://127.0.0.1:0")) {
            PythonRstreams.Result result = PythonRstreams.run(100, "-m", "rstreams.conformance", server.url(),
                    "-k", "ex.", "--idle-timeout", "1", "--junit", "target/conformance-tcp-idle.xml");
            assertEquals(result.status(), 0, "extension cases failed against " + server.url() + ":\n" + result.output());
            assertTrue(!result.output().contains("skip  ex.idle_timeout") && !result.output().contains("skip  ex.pings_keep_alive"),
                    "the idle-timeout cases must run, not skip:\n" + result.output());
        }
    }
}
