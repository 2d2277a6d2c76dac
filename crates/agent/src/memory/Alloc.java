package ferrofluid;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.reflect.Array;

/**
 * Allocation counting for the agent's {@code alloc} engine: the {@code alloc} probe after every
 * {@code new}, {@code newarray}, {@code anewarray} and {@code multianewarray} calls {@link #alloc}
 * with the new object and its allocation-site id. Counts are kept here, in Java, with one atomic
 * add per allocation (and one more for an array's length), so that counting costs no JNI call;
 * only the objects the agent measures or tracks (the first of each site, then every
 * {@code every}-th) reach the native {@link #sample}. The agent defines this class in the
 * bootstrap loader, sets it up with {@link #reset} and reads it with {@link #counts}. Compiled by
 * {@code javac --release 11} into Alloc.class next to this file (checked by a test).
 */
public final class Alloc {
    private Alloc() {
    }

    private static final VarHandle AT = MethodHandles.arrayElementVarHandle(long[].class);
    /** Sites per chunk: 4096, two counters each (objects, array elements). */
    private static final int SHIFT = 12;
    private static final int MASK = (1 << SHIFT) - 1;

    /** Counters per chunk of sites; a chunk is created once and never replaced in a session. */
    private static volatile long[][] chunks = new long[0][];
    /** Every how many allocations of a site one goes to the agent (0: the first only). */
    private static volatile long every;

    /** Counts {@code o}, allocated at {@code site}; hands it to the agent if it is sampled. */
    public static void alloc(Object o, int site) {
        long[][] c = chunks;
        int i = site >>> SHIFT;
        long[] a = i < c.length ? c[i] : null;
        if (a == null) {
            a = chunk(i);
        }
        long n = count(a, (site & MASK) << 1, o);
        long e = every;
        if (n == 0 || (e > 0 && n % e == 0)) {
            sample(o, site);
        }
    }

    /**
     * Adds {@code o} to the counters at {@code j} (an array's length at {@code j + 1}); returns
     * the objects counted there before it.
     */
    private static long count(long[] a, int j, Object o) {
        long n = (long) AT.getAndAdd(a, j, 1L);
        if (o.getClass().isArray()) {
            AT.getAndAdd(a, j + 1, (long) Array.getLength(o));
        }
        return n;
    }

    /** The chunk of counters {@code i}, created on first use. */
    private static synchronized long[] chunk(int i) {
        long[][] c = chunks;
        if (i >= c.length) {
            long[][] grown = new long[i + 1][];
            System.arraycopy(c, 0, grown, 0, c.length);
            c = grown;
        }
        if (c[i] == null) {
            c[i] = new long[2 << SHIFT];
        }
        chunks = c;
        return c[i];
    }

    /**
     * Forgets every count and samples every {@code every}-th allocation of each site from now on.
     * Runs before any class carries probes, and first runs the counting path once: linking its
     * {@code VarHandle} call sites allocates in the JDK's own (probed) code, which would call
     * {@link #alloc} again, before that link exists, until the stack overflows.
     */
    public static synchronized void reset(long every) {
        count(new long[2], 0, new long[1]);
        chunks = new long[0][];
        Alloc.every = every;
    }

    /**
     * The counters of sites {@code 0..sites}: objects of site s at {@code 2*s}, array elements at
     * {@code 2*s+1}.
     */
    public static long[] counts(int sites) {
        long[][] c = chunks;
        long[] out = new long[2 * sites];
        for (int i = 0; i < c.length; i++) {
            long[] a = c[i];
            int from = i << (SHIFT + 1);
            if (a == null || from >= out.length) {
                continue;
            }
            int n = Math.min(a.length, out.length - from);
            for (int k = 0; k < n; k++) {
                out[from + k] = (long) AT.getVolatile(a, k);
            }
        }
        return out;
    }

    /** The agent measures (and, when it tracks objects, tags) {@code o}. */
    private static native void sample(Object o, int site);
}
