// The own time of the Node driver's waits (tests/interop/driver.mjs), as testkit.bound counts the
// Python driver's: wall time less the time the threads of this process and of the case's server
// (the "pids" of the plan, with their descendants) spent runnable but waiting for a CPU (Linux's
// /proc/PID/task/TID/schedstat, its second field), summed over the threads. On an idle machine
// that is wall time: a hang fails after its limit. On a loaded one the seconds other processes'
// CPU took from the awaited work do not count. Where /proc does not say, it is wall time.
//
// ownTime(pids) starts a wait's clock: it returns a function that gives the own seconds since.
import { readdirSync, readFileSync } from "node:fs";

function read(path) {
  try {
    return readFileSync(path, "ascii");
  } catch {
    return null;
  }
}

/** Thread id -> seconds it has waited for a CPU, for every thread of `pids` and their descendants. */
export function delays(pids) {
  const found = new Map();
  const todo = [...pids];
  const seen = new Set();
  while (todo.length > 0) {
    const pid = todo.pop();
    if (seen.has(pid)) continue;
    seen.add(pid);
    let tids;
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tids) {
      const delay = Number((read(`/proc/${pid}/task/${tid}/schedstat`) ?? "").split(" ")[1]) / 1e9;
      if (Number.isFinite(delay)) found.set(tid, delay);
      const kids = read(`/proc/${pid}/task/${tid}/children`) ?? "";
      todo.push(...kids.split(/\s+/).filter(Boolean).map(Number));
    }
  }
  return found;
}

/** A wait's clock over this process and `pids`: () => own seconds since ownTime() was called. */
export function ownTime(pids = []) {
  const all = [process.pid, ...pids];
  const start = performance.now();
  const base = delays(all);
  const last = new Map(base); // (a thread that ended counts up to when it was last looked at)
  return () => {
    for (const [tid, delay] of delays(all)) last.set(tid, delay);
    let starved = 0;
    for (const [tid, delay] of last) starved += Math.max(delay - (base.get(tid) ?? 0), 0);
    return Math.max((performance.now() - start) / 1000 - starved, 0);
  };
}
