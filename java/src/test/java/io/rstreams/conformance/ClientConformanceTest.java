package io.rstreams.conformance;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.expectThrows;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.PythonRstreams;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.testng.annotations.DataProvider;
import org.testng.annotations.Test;

/**
 * rstreams' client conformance suite ({@code python -m rstreams.conformance.clients}, docs/conformance.md
 * "Testing a client") judging the Java client: the suite plays the server byte by byte and starts
 * {@link ClientAdapterMain} in a JVM of its own for each case, over TCP and WebSocket (the two
 * runs at the same time).
 */
public class ClientConformanceTest {
    /** The cases the suite has today: a case added there must run here too, not vanish. */
    private static final int CASES = 13;

    @DataProvider(name = "transports")
    public Object[][] transports() {
        return new Object[][] {{"tcp"}, {"ws"}};
    }

    /** The adapter command: this JVM's java with this test run's classpath; quick start-up flags. */
    static String adapterCommand() {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        return String.join(" ", shellQuote(java), "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
                "-cp", shellQuote(System.getProperty("java.class.path")), ClientAdapterMain.class.getName(),
                "{url}", "{publisher}", "{script}");
    }

    /** {@code s} as one word for the suite's shell-like splitting (shlex). */
    private static String shellQuote(String s) {
        return s.matches("[A-Za-z0-9_./:=+@%-]+") ? s : "'" + s.replace("'", "'\"'\"'") + "'";
    }

    /**
     * The suite's run over each transport, all started together by the first test that asks: a
     * case mostly waits (for a JVM to start, for a close), so the transports' runs overlap.
     */
    private static Map<String, CompletableFuture<PythonRstreams.Result>> runs;

    private static synchronized CompletableFuture<PythonRstreams.Result> run(String transport) {
        if (runs == null) {
            runs = new HashMap<>();
            for (Object[] t : new ClientConformanceTest().transports()) {
                String each = (String) t[0];
                CompletableFuture<PythonRstreams.Result> result = new CompletableFuture<>();
                Thread runner = new Thread(() -> {
                    try {
                        result.complete(PythonRstreams.run(380, "-m", "rstreams.conformance.clients",
                                "--transport", each, "--timeout", "15", "--client", adapterCommand(),
                                "--junit", "target/client-conformance-" + each + ".xml"));
                    } catch (Throwable e) {
                        result.completeExceptionally(e);
                    }
                }, "client-conformance-" + each);
                runner.setDaemon(true);
                runner.start();
                runs.put(each, result);
            }
        }
        return runs.get(transport);
    }

    @Test(dataProvider = "transports", timeOut = 400_000)
    public void everyClientCasePasses(String transport) throws Exception {
        PythonRstreams.python();
        PythonRstreams.Result result;
        try {
            result = run(transport).get(390, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            throw e.getCause() instanceof Exception cause ? cause : e;
        }
        Matcher m = Pattern.compile("(?m)^(\\d+) of (\\d+) client cases passed$").matcher(result.output());
        assertTrue(m.find(), "no summary line from the client suite:\n" + result.output());
        assertEquals(m.group(1), m.group(2), "client cases failed over " + transport + ":\n" + result.output());
        assertTrue(Integer.parseInt(m.group(2)) >= CASES, result.output());
        assertTrue(!result.output().contains("skip "), "every case must run, none skip:\n" + result.output());
        assertEquals(result.status(), 0, result.output());
    }

    @Test
    public void theAdapterReadsScriptsAndNamesABadStep() {
        assertEquals(ClientAdapterMain.parseScript(" r3  w3 c t q"), List.of(new ClientAdapterMain.Step('r', 3),
                new ClientAdapterMain.Step('w', 3), new ClientAdapterMain.Step('c', 0), new ClientAdapterMain.Step('t', 0),
                new ClientAdapterMain.Step('q', 0)));
        for (String bad : List.of("r0", "w", "c1", "x", "r-1", "r99999999999999999999")) {
            IllegalArgumentException e = expectThrows(IllegalArgumentException.class, () -> ClientAdapterMain.parseScript(bad));
            assertEquals(e.getMessage(), "bad script step \"" + bad + "\": use rN, wN, c, t or q");
        }
    }
}
