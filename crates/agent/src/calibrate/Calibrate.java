package ferrofluid;

/**
 * Probe calibration (JFluid 5.3): the agent instruments {@code empty} with the real probes, defines
 * this class in the bootstrap loader and calls {@code run} in batches. Compiled by
 * {@code javac --release 8} into Calibrate.class next to this file (checked by a test).
 */
public final class Calibrate {
    private Calibrate() {
    }

    static void empty() {
    }

    /** Calls {@code empty} {@code n} times; returns the elapsed nanoseconds. */
    public static long run(int n) {
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            empty();
        }
        return System.nanoTime() - t0;
    }
}
