package ferrofluid;

/**
 * Per-call cost of the calling-context probes of {@code Counts} (the {@code count} engine and
 * sampled timing), without an agent: no root, the methods marked ready, so the probes run
 * their inlined fast path as on a busy server's hot path. A loop calls two small methods that
 * carry the probes exactly as the class-file engine inserts them (context and saved node in
 * locals, the exit before the return), beside the same loop without probes and with the leaf
 * probe alone (a method that calls nothing).
 * Usage: {@code ContextBench [calls]}; prints ns per call of each after a warm-up.
 */
public final class ContextBench {
    private static int field = 1;

    /** {@code Counts.leafContext}, if this {@code Counts} has it (an older one may not). */
    private static final java.lang.invoke.MethodHandle LEAF = leafHook();

    private static java.lang.invoke.MethodHandle leafHook() {
        try {
            return java.lang.invoke.MethodHandles.lookup().findStatic(Counts.class, "leafContext",
                java.lang.invoke.MethodType.methodType(void.class, int.class));
        } catch (ReflectiveOperationException e) {
            return null;
        }
    }

    private static int plainA(int x) {
        return x + field;
    }

    private static int plainB(int x) {
        return x * 3 + field;
    }

    private static int probedA(int x) {
        Object c = Counts.enterContext(1);
        int saved = Counts.savedContext(c);
        int r = x + field;
        Counts.exitContext(c, 1, 0, saved);
        return r;
    }

    private static int probedB(int x) {
        Object c = Counts.enterContext(2);
        int saved = Counts.savedContext(c);
        int r = x * 3 + field;
        Counts.exitContext(c, 2, 0, saved);
        return r;
    }

    private static int leafA(int x) throws Throwable {
        LEAF.invokeExact(1);
        return x + field;
    }

    private static int leafB(int x) throws Throwable {
        LEAF.invokeExact(2);
        return x * 3 + field;
    }

    private static long plain(int n) {
        long s = 0;
        for (int i = 0; i < n; i++) {
            s += plainA(i);
            s += plainB(i);
        }
        return s;
    }

    private static long probed(int n) {
        Object c = Counts.enterContext(0);
        int saved = Counts.savedContext(c);
        long s = 0;
        for (int i = 0; i < n; i++) {
            s += probedA(i);
            s += probedB(i);
        }
        Counts.exitContext(c, 0, 0, saved);
        return s;
    }

    private static long leaves(int n) throws Throwable {
        Object c = Counts.enterContext(0);
        int saved = Counts.savedContext(c);
        long s = 0;
        for (int i = 0; i < n; i++) {
            s += leafA(i);
            s += leafB(i);
        }
        Counts.exitContext(c, 0, 0, saved);
        return s;
    }

    public static void main(String[] args) throws Throwable {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 100_000_000;
        Counts.reset(true, 1 << 20, 0.05, true);
        for (int id = 0; id < 3; id++) {
            Counts.markReadyForTest(id);
        }
        long sink = 0;
        double plainNs = 0;
        double probedNs = 0;
        double leafNs = 0;
        boolean hasLeaves = LEAF != null;
        for (int round = 0; round < 5; round++) {
            long t0 = System.nanoTime();
            sink += plain(n);
            long t1 = System.nanoTime();
            sink += probed(n);
            long t2 = System.nanoTime();
            if (hasLeaves) {
                sink += leaves(n);
            }
            long t3 = System.nanoTime();
            // The first two rounds warm up (compilation).
            if (round >= 2) {
                plainNs += (t1 - t0) / (2.0 * n);
                probedNs += (t2 - t1) / (2.0 * n);
                leafNs += (t3 - t2) / (2.0 * n);
            }
        }
        System.out.printf("without probes %.2f ns per call, with probes %.2f ns per call, %s%s%n",
            plainNs / 3, probedNs / 3,
            hasLeaves ? String.format("leaf probe %.2f ns per call", leafNs / 3) : "no leaf probe",
            sink == 42 ? " " : "");
    }
}
