package io.rstreams.interop;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.testng.annotations.Test;

/** The interop client's wait clock on a made-up {@code /proc} and a virtual wall clock. */
public class OwnTimeTest {
    private static final long S = TimeUnit.SECONDS.toNanos(1);

    private static void schedstat(Path proc, long pid, long tid, long waitedNanos) throws IOException {
        Path task = proc.resolve(pid + "/task/" + tid);
        Files.createDirectories(task);
        Files.writeString(task.resolve("schedstat"), "123456 " + waitedNanos + " 7\n");
    }

    @Test(timeOut = 30_000)
    public void secondsWaitedForACpuDoNotCount() throws IOException {
        Path proc = Files.createTempDirectory("proc");
        schedstat(proc, 10, 10, 5 * S);
        schedstat(proc, 10, 11, 0);
        schedstat(proc, 20, 20, 0); // a child of the server's second thread
        Files.writeString(proc.resolve("10/task/11/children"), "20\n");
        AtomicLong wall = new AtomicLong(1000 * S);
        OwnTime clock = new OwnTime(proc, List.of(10L), wall::get, 5);

        wall.addAndGet(60 * S); // a minute of wall time, of which each thread waited 19 s for a CPU
        schedstat(proc, 10, 10, 24 * S);
        schedstat(proc, 10, 11, 19 * S);
        schedstat(proc, 20, 20, 19 * S);
        assertEquals(clock.seconds(), 3.0, 1e-9);
        assertTrue(clock.nextLook() > 0, "a starved wait is not over after 3 of its 5 own seconds");

        Files.delete(proc.resolve("20/task/20/schedstat")); // a thread that ended counts as last seen
        wall.addAndGet(S);
        assertEquals(clock.seconds(), 4.0, 1e-9);
        wall.addAndGet(S);
        assertEquals(clock.nextLook(), 0, "over after its 5 own seconds");
    }

    @Test(timeOut = 30_000)
    public void withoutProcItIsWallTime() throws IOException {
        Path proc = Files.createTempDirectory("proc").resolve("absent");
        AtomicLong wall = new AtomicLong(0);
        OwnTime clock = new OwnTime(proc, List.of(10L), wall::get, 5);
        wall.addAndGet(4 * S);
        assertEquals(clock.seconds(), 4.0, 1e-9);
        assertEquals(clock.nextLook(), S, "a look at most every second");
        wall.addAndGet(S / 2);
        assertEquals(clock.nextLook(), S / 2);
        wall.addAndGet(S / 2);
        assertEquals(clock.nextLook(), 0);
    }

    @Test(timeOut = 30_000)
    public void aWaitEndsAfterHardTimesItsLimitOfWallTime() throws IOException {
        Path proc = Files.createTempDirectory("proc");
        AtomicLong wall = new AtomicLong(0);
        schedstat(proc, 10, 10, 0);
        OwnTime clock = new OwnTime(proc, List.of(10L), wall::get, 2);
        wall.addAndGet(OwnTime.HARD * 2 * S - S);
        schedstat(proc, 10, 10, OwnTime.HARD * 2 * S); // starved all along
        assertEquals(clock.seconds(), 0.0);
        assertTrue(clock.nextLook() > 0);
        wall.addAndGet(S);
        assertEquals(clock.nextLook(), 0);
    }

    @Test(timeOut = 30_000)
    public void ownTimeIsAtMostWallTime() throws InterruptedException {
        long before = System.nanoTime();
        OwnTime clock = OwnTime.start(5, List.of());
        Thread.sleep(20);
        double own = clock.seconds();
        assertTrue(own <= (System.nanoTime() - before) / 1e9, "own " + own + " s");
    }
}
