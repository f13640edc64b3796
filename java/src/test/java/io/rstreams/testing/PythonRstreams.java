package io.rstreams.testing;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.testng.SkipException;

/**
 * The Python implementation, run as a real process from its virtual environment
 * ({@code -Drstreams.python.venv=PATH}, which scripts/test.sh passes). Without the property the
 * interop tests skip, saying why, except under CI ({@code CI=true}), where they fail; a
 * property naming a directory without {@code bin/python} always fails.
 */
public final class PythonRstreams implements AutoCloseable {
    private final Process process;
    private final String url;
    private final StringBuilder output;

    private PythonRstreams(Process process, String url, StringBuilder output) {
        this.process = process;
        this.url = url;
        this.output = output;
    }

    /** The venv's python, or a skip (a failure under CI) when no venv was given. */
    public static Path python() {
        String venv = System.getProperty("rstreams.python.venv", "");
        if (venv.isBlank()) {
            String why = "the Python interop tests need -Drstreams.python.venv=/path/to/.venv-test (scripts/test.sh passes it)";
            if ("true".equalsIgnoreCase(System.getenv("CI"))) {
                throw new IllegalStateException("CI=true but " + why);
            }
            throw new SkipException(why);
        }
        Path python = Path.of(venv).toAbsolutePath().resolve("bin/python");
        if (!Files.isExecutable(python)) {
            throw new IllegalStateException("-Drstreams.python.venv=" + venv + " has no bin/python: create it with "
                    + "bash scripts/test.sh (or python3 -m venv " + venv + " && " + venv + "/bin/pip install -e .)");
        }
        return python;
    }

    private static ProcessBuilder command(List<String> args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(python().toString());
        cmd.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().put("PYTHONPATH", RepoPaths.root().resolve("src").toString());
        pb.environment().remove("RSTREAMS_TOKEN");
        return pb;
    }

    /** Starts {@code rstreams serve tcp://127.0.0.1:0 ARGS...} and waits for the URL it prints. */
    public static PythonRstreams serve(String... args) throws IOException, InterruptedException {
        return serveAt("tcp://127.0.0.1:0", args);
    }

    /** Starts {@code rstreams serve URL ARGS...} (port 0) and waits for the URL it prints. */
    public static PythonRstreams serveAt(String where, String... args) throws IOException, InterruptedException {
        List<String> all = new ArrayList<>(List.of("-m", "rstreams.cli", "serve", where));
        all.addAll(List.of(args));
        return launch(where, all);
    }

    /**
     * Starts {@code python SCRIPT URL ARGS...}, a server of the test's own that prints
     * {@code "... on URL"} once it listens (as {@code rstreams serve} does), and waits for that URL.
     */
    public static PythonRstreams script(Path script, String where, String... args) throws IOException, InterruptedException {
        List<String> all = new ArrayList<>(List.of(script.toString(), where));
        all.addAll(List.of(args));
        return launch(where, all);
    }

    private static PythonRstreams launch(String where, List<String> all) throws IOException, InterruptedException {
        String scheme = where.substring(0, where.indexOf("://") + 3);
        Process p = command(all).start();
        StringBuilder output = new StringBuilder();
        CompletableFuture<String> url = new CompletableFuture<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line = r.readLine(); line != null; line = r.readLine()) {
                    synchronized (output) {
                        output.append(line).append('\n');
                        output.notifyAll();
                    }
                    int at = line.indexOf(" on " + scheme);
                    if (at >= 0) {
                        url.complete(line.substring(at + 4).trim());
                    }
                }
            } catch (IOException e) {
                // the process ended
            }
            synchronized (output) {
                output.append(ENDED);
                output.notifyAll();
            }
            url.completeExceptionally(new IllegalStateException("the server ended without printing its URL:\n" + output));
        }, "rstreams-serve-output");
        reader.setDaemon(true);
        reader.start();
        try {
            return new PythonRstreams(p, url.get(60, TimeUnit.SECONDS), output);
        } catch (Exception e) {
            p.destroyForcibly();
            throw new IllegalStateException("the Python server did not start: " + e.getMessage(), e);
        }
    }

    /**
     * Starts {@code python ARGS...} (the repository's src on its path, errors merged into its
     * output), leaving its input and output to the caller, who must end it.
     */
    public static Process start(String... args) throws IOException {
        return command(List.of(args)).start();
    }

    /** Runs {@code python ARGS...} to its end (at most {@code timeoutSeconds}); returns exit status and output. */
    public static Result run(long timeoutSeconds, String... args) throws IOException, InterruptedException {
        Process p = command(List.of(args)).start();
        CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> {
            try {
                return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                return "";
            }
        });
        if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException("python " + String.join(" ", args) + " did not finish in " + timeoutSeconds + " s");
        }
        return new Result(p.exitValue(), out.join());
    }

    /** A Python client that requests one element of {@code name} at {@code url} and says how that ended. */
    private static final String REQUEST_CLIENT = String.join("\n",
            "import asyncio, sys",
            "import rstreams",
            "async def main(url, name):",
            "    try:",
            "        conn = await rstreams.connect(url, keepalive=None)",
            "        try:",
            "            await conn.request(name)",
            "            print('served', flush=True)",
            "        finally:",
            "            await conn.aclose()",
            "    except Exception as error:",
            "        print(type(error).__name__, getattr(error, 'code', None), str(error), flush=True)",
            "asyncio.run(main(sys.argv[1], sys.argv[2]))");

    /**
     * Runs a Python client (rstreams.connect, no keepalive) that requests one element of
     * {@code name} at {@code url} and closes (at most {@code timeoutSeconds}); its output is one
     * line: {@code served}, or the error's class, its code ({@code None} without one) and its text.
     */
    public static Result request(long timeoutSeconds, String url, String name) throws IOException, InterruptedException {
        return run(timeoutSeconds, "-c", REQUEST_CLIENT, url, name);
    }

    /** Exit status and combined output of a finished process. */
    public record Result(int status, String output) {}

    public String url() {
        return url;
    }

    public String output() {
        synchronized (output) {
            return output.toString();
        }
    }

    /** Appended to {@link #output} once the process's output ended. */
    private static final String ENDED = "(output ended)\n";

    /**
     * The output once {@code until} holds for it (waits at most {@code timeoutSeconds}). A thread
     * of its own reads the process's output from a pipe, so a line the process printed before
     * it answered on a socket can be read after the answer: a test waits for the lines it checks.
     *
     * @throws AssertionError with the output when it does not hold in time or the output ended
     */
    public String awaitOutput(java.util.function.Predicate<String> until, long timeoutSeconds) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds);
        synchronized (output) {
            while (!until.test(output.toString())) {
                long left = deadline - System.nanoTime();
                if (left <= 0 || output.toString().endsWith(ENDED)) {
                    throw new AssertionError("the Python process did not print what was awaited in " + timeoutSeconds + " s:\n" + output);
                }
                TimeUnit.NANOSECONDS.timedWait(output, left);
            }
            return output.toString();
        }
    }

    /** Kills the process (SIGKILL: no shutdown of its own, its sockets closed by the kernel) and waits for its end. */
    public void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(20, TimeUnit.SECONDS);
    }

    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
