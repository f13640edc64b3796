package io.rstreams.conformance;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.rstreams.net.RsioServer;
import io.rstreams.testing.PythonRstreams;
import io.rstreams.testing.TlsFixture;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.testng.annotations.DataProvider;
import org.testng.annotations.Test;

/**
 * rstreams' own conformance suite ({@code python -m rstreams.conformance URL}, docs/conformance.md)
 * run against the Java server, as a separate process speaking raw bytes, over TCP, TLS,
 * WebSocket and WebSocket over TLS.
 *
 * <p>The expected cases come from the suite itself ({@code --list}, with the same {@code -k}):
 * every listed case must run (pass or skip, none missing, none extra), none may fail, and a
 * case may skip only for one of the documented reasons below, so a case added to the Python
 * suite is run here without editing this class.
 */
public class ConformanceSuiteTest {
    /**
     * Why a case may skip against this server, always: an extension it does not offer
     * (auth without a token; error codes, messages, content types, metadata, channels and
     * input-parts it offers, so their cases must run), the
     * token or the idle timeout the driver was not given (those cases run in
     * {@link #authCasesPassAgainstAServerRequiringAToken} and {@link #idleTimeoutCasesPass}).
     */
    private static final List<Pattern> DOCUMENTED_SKIPS = List.of(
            Pattern.compile("the endpoint does not list extension auth \\(id 2\\) in its serverHello"),
            Pattern.compile(Pattern.quote("no token the endpoint accepts was given (--token)")),
            Pattern.compile(Pattern.quote("the endpoint's idle timeout is not known (--idle-timeout)")));

    private static final Pattern CASE_LINE = Pattern.compile("^(PASS|FAIL|skip)  (\\S+) ", Pattern.MULTILINE);
    private static final Pattern TOTAL_LINE = Pattern.compile("^total\\s+(\\d+)\\s+(\\d+)\\s+(\\d+)$", Pattern.MULTILINE);

    /** What {@link #listed} returned, by its arguments: each list is asked for once per run (a Python start-up each). */
    private static final Map<List<String>, List<String>> LISTED = new java.util.concurrent.ConcurrentHashMap<>();

    /** The ids the suite lists ({@code --list}, optionally with {@code -k pattern}), in its order. */
    static List<String> listed(String... pattern) throws Exception {
        List<String> key = List.of(pattern);
        List<String> known = LISTED.get(key);
        if (known == null) {
            known = List.copyOf(list(pattern));
            LISTED.put(key, known);
        }
        return known;
    }

    private static List<String> list(String... pattern) throws Exception {
        List<String> args = new ArrayList<>(List.of("-m", "rstreams.conformance", "-", "--list"));
        args.addAll(List.of(pattern));
        PythonRstreams.Result result = PythonRstreams.run(60, args.toArray(String[]::new));
        assertEquals(result.status(), 0, "python -m rstreams.conformance - --list failed:\n" + result.output());
        List<String> ids = new ArrayList<>();
        for (String line : result.output().split("\n")) {
            if (!line.isBlank()) {
                ids.add(line.substring(0, line.indexOf(' ')));
            }
        }
        assertTrue(!ids.isEmpty(), "the suite lists no cases:\n" + result.output());
        return ids;
    }

    /** Each case the run reported ({@code -v}: passes too), its outcome and, for a skip, the reason line after it. */
    static Map<String, String> outcomes(String output) {
        Map<String, String> outcomes = new LinkedHashMap<>();
        Matcher m = CASE_LINE.matcher(output);
        while (m.find()) {
            String outcome = m.group(1);
            if (outcome.equals("skip")) {
                int start = output.indexOf('\n', m.end()) + 1;
                int end = output.indexOf('\n', start);
                outcome = "skip: " + output.substring(start, end < 0 ? output.length() : end).strip();
            }
            assertTrue(outcomes.put(m.group(2), outcome) == null, "case " + m.group(2) + " reported twice:\n" + output);
        }
        return outcomes;
    }

    /**
     * The run's report against what the suite lists: every listed case reported once and none
     * other, no failure, skips only for {@code allowedSkips}, and the total line agreeing.
     */
    static void assertRan(PythonRstreams.Result result, List<String> listed, List<Pattern> allowedSkips) {
        String output = result.output();
        Map<String, String> outcomes = outcomes(output);
        assertEquals(new TreeSet<>(outcomes.keySet()), new TreeSet<>(listed), "the cases run are not the cases listed:\n" + output);
        assertEquals(outcomes.size(), listed.size(), "the suite lists a case twice:\n" + listed);
        int skipped = 0;
        for (Map.Entry<String, String> e : outcomes.entrySet()) {
            String outcome = e.getValue();
            assertTrue(!outcome.equals("FAIL"), "case " + e.getKey() + " failed:\n" + output);
            if (outcome.startsWith("skip: ")) {
                String why = outcome.substring("skip: ".length());
                assertTrue(allowedSkips.stream().anyMatch(p -> p.matcher(why).matches()),
                        "case " + e.getKey() + " skipped for an undocumented reason: " + why + "\n" + output);
                skipped++;
            }
        }
        Matcher total = TOTAL_LINE.matcher(output);
        assertTrue(total.find(), "no total line:\n" + output);
        assertEquals(Integer.parseInt(total.group(2)), 0, "failures in the total line:\n" + output);
        assertEquals(Integer.parseInt(total.group(1)), listed.size() - skipped, "passes in the total line:\n" + output);
        assertEquals(Integer.parseInt(total.group(3)), skipped, "skips in the total line:\n" + output);
        assertEquals(result.status(), 0, "the suite's exit status:\n" + output);
    }

    @DataProvider(name = "transports")
    public Object[][] transports() {
        return new Object[][] {{"tcp://127.0.0.1:0"}, {"tls://127.0.0.1:0"}, {"ws://127.0.0.1:0/rsio"}, {"wss://127.0.0.1:0/rsio"}};
    }

    private static RsioServer.Builder builder(String where) throws Exception {
        RsioServer.Builder b = new ConformancePublishers().addTo(RsioServer.builder())
                .channel("conformance/echo", (input, request) -> input); // a channel offered: the ex.ch_ cases run beside it (§21)
        if (where.startsWith("tls") || where.startsWith("wss")) {
            b.tls(TlsFixture.get().server);
        }
        return b.resume(true); // over every transport: the suite's resume cases open new WebSockets too (§16.9)
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
            // 12 cases at once, not 4: most of a case's time is waiting on the other end (a run took about half as long)
            List<String> args = new ArrayList<>(List.of("-m", "rstreams.conformance", server.url(), "-v", "--jobs", "12",
                    "--junit", "target/conformance-" + where.substring(0, where.indexOf(':')) + ".xml"));
            args.addAll(tlsArgs(server.url()));
            PythonRstreams.Result result = PythonRstreams.run(280, args.toArray(String[]::new));
            assertRan(result, listed(), DOCUMENTED_SKIPS);
        }
    }

    /** The auth cases (§15), against a server that requires a token. */
    @Test(timeOut = 120_000)
    public void authCasesPassAgainstAServerRequiringAToken() throws Exception {
        PythonRstreams.python();
        try (RsioServer server = builder("tcp").token("conformance-token").bind("tcp://127.0.0.1:0")) {
            PythonRstreams.Result result = PythonRstreams.run(100, "-m", "rstreams.conformance", server.url(), "-v",
                    "-k", "ex.auth_", "--token", "conformance-token", "--publisher", "range", "--junit", "target/conformance-tcp-auth.xml");
            assertRan(result, listed("-k", "ex.auth_"), List.of());  // every auth case runs: none may skip
        }
    }

    /**
     * The auth cases (§15) against a server whose authentication is optional
     * ({@code authRequired(false)}, §15.2): the client with the token is checked as before, and
     * ex.auth_required skips, saying a client without auth was served; no other case may skip.
     */
    @Test(timeOut = 120_000)
    public void authCasesPassAgainstAServerWithOptionalAuth() throws Exception {
        PythonRstreams.python();
        try (RsioServer server = builder("tcp").token("conformance-token").authRequired(false).bind("tcp://127.0.0.1:0")) {
            PythonRstreams.Result result = PythonRstreams.run(100, "-m", "rstreams.conformance", server.url(), "-v",
                    "-k", "ex.auth_", "--token", "conformance-token", "--publisher", "range", "--junit",
                    "target/conformance-tcp-auth-optional.xml");
            assertRan(result, listed("-k", "ex.auth_"), List.of(Pattern.compile(
                    Pattern.quote("authentication is optional at this endpoint: a client without auth was served"))));
            assertTrue(outcomes(result.output()).get("ex.auth_required").startsWith("skip: "),
                    "ex.auth_required must skip here:\n" + result.output());
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
