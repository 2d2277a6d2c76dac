/**
 * Known native and bytecode work for the `native` mode's exactness test: a native method that
 * busy-waits a known time and calls back into Java a known number of times (bound with
 * RegisterNatives), each callback doing a known loop of bytecode; a native that only spins
 * (bound by name); Thread.sleep of a known total. Runs on the main thread and a worker; prints
 * what it measured itself (nanoTime around each callback and each sleep, the natives' own clock
 * around their spinning) and the work's checksum. A third thread runs bytecode alone, timed by
 * its own clocks (elapsed and CPU) and by main's around its whole life.
 *
 * <p>Usage: java NativeExact LIBRARY
 */
public class NativeExact {
    /**
     * Spins {@code nanos} ns in native code, calling {@link #callback} {@code upcalls} times in
     * between; returns how long it spun by its own clock.
     */
    static native long busy(long nanos, int upcalls);

    /** Spins {@code nanos} ns in native code; returns how long it spun by its own clock. */
    static native long spin(long nanos);

    /** Does nothing; each thread calls it before its timed native calls. */
    static native void warm();

    /**
     * One {@link #busy} call; returns its native time by the native's own clock (more than
     * {@code BUSY_NS} when the thread lost the CPU near the end of a part). The caller's clock
     * would also count the time the thread waits for the CPU on its way in and out, which a
     * loaded machine makes longer than the native itself.
     */
    static long timedBusy() {
        return busy(BUSY_NS, BUSY_UPCALLS);
    }

    static final long BUSY_NS = 500_000;
    static final int BUSY_UPCALLS = 3;
    static final int MAIN_BUSY_CALLS = 200;
    static final int WORKER_BUSY_CALLS = 50;
    static final long SPIN_NS = 1_000_000;
    static final int SPIN_CALLS = 100;
    static final long SLEEP_MS = 10;
    static final int SLEEPS = 20;
    static final int CALLBACK_LOOP = 100_000;
    /** More calls of {@link #warm} on main: a native that does nothing, for the compensation. */
    static final int NOPS = 100_000;

    /** Time spent inside callbacks, by the callbacks' own clock. */
    static long callbackNs;
    static long checksum;
    /** Native time of {@link #busy} on each thread and of {@link #spin}, by the natives' own clock. */
    static long mainBusyNs, workerBusyNs, spinNs;
    /** The bytecode thread's loop: elapsed and CPU time by its own clocks. */
    static long pureNs, pureCpuNs;
    static final int PURE_LOOP = 30_000_000;

    /** Bytecode work: a loop the JIT cannot remove. */
    static int callback(int x) {
        long t0 = System.nanoTime();
        int h = x;
        for (int i = 0; i < CALLBACK_LOOP; i++) {
            h = h * 31 + (i ^ (h >>> 7));
        }
        synchronized (NativeExact.class) {
            callbackNs += System.nanoTime() - t0;
            checksum += h;
        }
        return h;
    }

    /** Bytecode alone: no native call, no callback. */
    static void pure() {
        var bean = java.lang.management.ManagementFactory.getThreadMXBean();
        long cpu0 = bean.getCurrentThreadCpuTime();
        long t0 = System.nanoTime();
        int h = 7;
        for (int i = 0; i < PURE_LOOP; i++) {
            h = h * 31 + (i ^ (h >>> 7));
        }
        pureNs = System.nanoTime() - t0;
        pureCpuNs = bean.getCurrentThreadCpuTime() - cpu0;
        checksum += h;
    }

    public static void main(String[] args) throws Exception {
        System.load(args[0]);
        // Its management classes loaded here, not on the bytecode thread.
        java.lang.management.ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
        Thread bytecode = new Thread(NativeExact::pure, "bytecode");
        long life0 = System.nanoTime();
        bytecode.start();
        bytecode.join();
        long lifeNs = System.nanoTime() - life0;
        Thread worker = new Thread(() -> {
            warm();
            long spun = 0;
            for (int i = 0; i < WORKER_BUSY_CALLS; i++) {
                spun += timedBusy();
            }
            workerBusyNs = spun;
        }, "worker");
        warm();
        worker.start();
        for (int i = 0; i < MAIN_BUSY_CALLS; i++) {
            mainBusyNs += timedBusy();
        }
        for (int i = 0; i < NOPS; i++) {
            warm();
        }
        for (int i = 0; i < SPIN_CALLS; i++) {
            spinNs += spin(SPIN_NS);
        }
        long sleptNs = 0;
        for (int i = 0; i < SLEEPS; i++) {
            long t0 = System.nanoTime();
            Thread.sleep(SLEEP_MS);
            sleptNs += System.nanoTime() - t0;
        }
        long join0 = System.nanoTime();
        worker.join();
        long joinNs = System.nanoTime() - join0;
        System.out.println("slept " + sleptNs + " callbacks " + callbackNs + " checksum " + checksum
                + " busy " + mainBusyNs + " " + workerBusyNs + " spin " + spinNs
                + " pure " + pureNs + " " + pureCpuNs + " " + lifeNs + " joined " + joinNs);
    }
}
