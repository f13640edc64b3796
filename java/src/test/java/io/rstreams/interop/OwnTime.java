package io.rstreams.interop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;
import java.util.stream.Stream;

/**
 * The clock of one wait of the interop client (as tests/interop/own-time.mjs and testkit.bound count
 * the other drivers'): wall time less the time the threads of this process and of the case's server
 * (the plan's {@code pids}, with their descendants) spent runnable but waiting for a CPU (Linux's
 * {@code /proc/PID/task/TID/schedstat}, its second field, in ns), summed over the threads. On an idle
 * machine that is wall time: a hang fails after its limit. On a loaded one the seconds other
 * processes' CPU took from the awaited work do not count. Where {@code /proc} does not say, it is
 * wall time. A wait ends after {@link #HARD} times its limit in wall time whatever the load.
 */
final class OwnTime {
    /** How many times its own-time limit in wall seconds any one wait may take. */
    static final int HARD = 30;
    /** The longest wall time between two looks at the clock. */
    static final long LOOK_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final Path proc;
    private final List<Long> pids;
    private final LongSupplier wall;
    private final double limit;
    private final long start;
    private final Map<String, Long> base;
    private final Map<String, Long> last;

    /** A wait of {@code limit} own seconds over the threads under {@code proc} of {@code pids}; {@code wall} gives ns. */
    OwnTime(Path proc, List<Long> pids, LongSupplier wall, double limit) {
        this.proc = proc;
        this.pids = List.copyOf(pids);
        this.wall = wall;
        this.limit = limit;
        this.start = wall.getAsLong();
        this.base = delays();
        this.last = new HashMap<>(base); // (a thread that ended counts up to when it was last looked at)
    }

    /** A wait's clock over this process and {@code pids}, from now. */
    static OwnTime start(double limit, List<Long> pids) {
        List<Long> all = new ArrayList<>(pids);
        all.add(0, ProcessHandle.current().pid());
        return new OwnTime(Path.of("/proc"), all, System::nanoTime, limit);
    }

    /** Own seconds since this clock started. */
    double seconds() {
        last.putAll(delays());
        long starved = 0;
        for (Map.Entry<String, Long> e : last.entrySet()) {
            starved += Math.max(e.getValue() - base.getOrDefault(e.getKey(), 0L), 0);
        }
        return Math.max(wall.getAsLong() - start - starved, 0) / 1e9;
    }

    /** Nanoseconds of wall time until the next look at the clock; 0 once the wait's bound is over. */
    long nextLook() {
        double left = Math.min(limit - seconds(), HARD * limit - (wall.getAsLong() - start) / 1e9);
        return left <= 0 ? 0 : Math.max(Math.min((long) (left * 1e9), LOOK_NANOS), 1);
    }

    /**
     * Waits on {@code monitor} (held by the caller; whoever changes what {@code done} reads notifies
     * it) until {@code done} holds: true then, false once {@code limit} own seconds over this process
     * and {@code pids} passed. The clock is read only when a look is due, never per wake.
     */
    static boolean await(Object monitor, BooleanSupplier done, double limit, List<Long> pids) throws InterruptedException {
        if (done.getAsBoolean()) {
            return true;
        }
        OwnTime clock = start(limit, pids);
        long look = System.nanoTime();
        while (!done.getAsBoolean()) {
            long now = System.nanoTime();
            if (now - look >= 0) {
                long next = clock.nextLook();
                if (next == 0) {
                    return false;
                }
                look = now + next;
            }
            TimeUnit.NANOSECONDS.timedWait(monitor, look - now);
        }
        return true;
    }

    /** Thread -> ns it has waited for a CPU, for every thread of {@code pids} and their descendants. */
    private Map<String, Long> delays() {
        Map<String, Long> found = new HashMap<>();
        Deque<Long> todo = new ArrayDeque<>(pids);
        Set<Long> seen = new HashSet<>();
        while (!todo.isEmpty()) {
            long pid = todo.pop();
            if (!seen.add(pid)) {
                continue;
            }
            List<Path> tasks;
            try (Stream<Path> listed = Files.list(proc.resolve(Long.toString(pid)).resolve("task"))) {
                tasks = listed.toList();
            } catch (IOException | RuntimeException e) {
                continue;
            }
            for (Path task : tasks) {
                String[] stat = read(task.resolve("schedstat")).trim().split("\\s+");
                if (stat.length > 1) {
                    try {
                        found.put(task.getFileName().toString(), Long.parseLong(stat[1]));
                    } catch (NumberFormatException e) {
                        // (not a count: the thread is not counted)
                    }
                }
                for (String kid : read(task.resolve("children")).trim().split("\\s+")) {
                    if (!kid.isEmpty()) {
                        try {
                            todo.push(Long.parseLong(kid));
                        } catch (NumberFormatException e) {
                            // (not a pid)
                        }
                    }
                }
            }
        }
        return found;
    }

    private static String read(Path path) {
        try {
            return Files.readString(path);
        } catch (IOException | RuntimeException e) {
            return "";
        }
    }
}
