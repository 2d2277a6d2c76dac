/**
 * Known native and bytecode work for the `native` mode's exactness test: a native method that
 * busy-waits a known time and calls back into Java a known number of times (bound with
 * RegisterNatives), each callback doing a known loop of bytecode; a native that only spins
 * (bound by name); Thread.sleep of a known total. Runs on the main thread and a worker; prints
 * what it measured itself (nanoTime around each callback and each sleep, the natives' own clock
 * around their spinning) and the work's checksum.
 *
 * <p>Usage: java NativeExact LIBRARY
 */
public class NativeExact {
    /**
     * Spins {@code nanos} ns in native code, calling {@link #callback} {@code upcalls} times in
     * between; returns how long it spun (more than asked when the thread lost the CPU).
     */
    static native long busy(long nanos, int upcalls);

    /** Spins {@code nanos} ns in native code; returns how long it spun. */
    static native long spin(long nanos);

    static final long BUSY_NS = 500_000;
    static final int BUSY_UPCALLS = 3;
    static final int MAIN_BUSY_CALLS = 200;
    static final int WORKER_BUSY_CALLS = 50;
    static final long SPIN_NS = 1_000_000;
    static final int SPIN_CALLS = 100;
    static final long SLEEP_MS = 10;
    static final int SLEEPS = 20;
    static final int CALLBACK_LOOP = 100_000;

    /** Time spent inside callbacks, by the callbacks' own clock. */
    static long callbackNs;
    static long checksum;
    /** Time spun in {@link #busy} on each thread, and in {@link #spin}, by the natives' clock. */
    static long mainBusyNs, workerBusyNs, spinNs;

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

    public static void main(String[] args) throws Exception {
        System.load(args[0]);
        Thread worker = new Thread(() -> {
            long spun = 0;
            for (int i = 0; i < WORKER_BUSY_CALLS; i++) {
                spun += busy(BUSY_NS, BUSY_UPCALLS);
            }
            workerBusyNs = spun;
        }, "worker");
        worker.start();
        for (int i = 0; i < MAIN_BUSY_CALLS; i++) {
            mainBusyNs += busy(BUSY_NS, BUSY_UPCALLS);
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
        worker.join();
        System.out.println("slept " + sleptNs + " callbacks " + callbackNs + " checksum " + checksum
                + " busy " + mainBusyNs + " " + workerBusyNs + " spin " + spinNs);
    }
}
