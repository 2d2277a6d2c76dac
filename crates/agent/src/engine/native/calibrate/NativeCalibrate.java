package ferrofluid;

/**
 * Calibration of the {@code native} engine's wrappers: the agent wraps {@code wrapped} as it wraps
 * an application's natives, leaves {@code bare} as it is, binds both to a function that does
 * nothing, defines this class in the bootstrap loader and times the two loops in batches; their
 * difference per call is what a wrapper adds to a native call. Compiled by
 * {@code javac --release 8} into NativeCalibrate.class next to this file (checked by a test).
 */
public final class NativeCalibrate {
    private NativeCalibrate() {
    }

    static native void wrapped();

    static native void bare();

    /** Calls {@code wrapped} {@code n} times; returns the elapsed nanoseconds. */
    public static long runWrapped(int n) {
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            wrapped();
        }
        return System.nanoTime() - t0;
    }

    /** Calls {@code bare} {@code n} times; returns the elapsed nanoseconds. */
    public static long runBare(int n) {
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            bare();
        }
        return System.nanoTime() - t0;
    }
}
