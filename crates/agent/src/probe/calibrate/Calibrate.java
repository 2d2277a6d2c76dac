package ferrofluid;

/**
 * Probe calibration (JFluid 5.3): the agent instruments {@code caller} and {@code empty} with the
 * real probes, defines this class in the bootstrap loader and calls {@code run} in batches. The
 * probes run as they do in application code: an instrumented caller (a root) calls an instrumented
 * callee in a loop, and both are JIT-compiled from ordinary Java calls, not only on-stack-replaced
 * in a loop entered from native code. Compiled by {@code javac --release 8} into Calibrate.class
 * next to this file (checked by a test).
 */
public final class Calibrate {
    private Calibrate() {
    }

    static void empty() {
    }

    static void caller(int n) {
        for (int i = 0; i < n; i++) {
            empty();
        }
    }

    /** Calls {@code caller(per)} {@code calls} times; returns the elapsed nanoseconds. */
    public static long run(int calls, int per) {
        long t0 = System.nanoTime();
        for (int c = 0; c < calls; c++) {
            caller(per);
        }
        return System.nanoTime() - t0;
    }
}
