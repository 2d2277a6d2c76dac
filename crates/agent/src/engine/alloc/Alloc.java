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
 * bootstrap loader, sets it up with {@link #reset} and reads it with {@link #counts}.
 *
 * <p>Objects the JVM allocates for a call (reflection, {@code clone()}) and the inner arrays of a
 * {@code multianewarray} reach {@link #vm} and {@link #inner} with the id of a site whose class
 * is known only at run time: such a site has counters for up to {@code SLOTS - 1} classes, each
 * claimed by the first object of its class, and one more for every other class. The agent reads
 * them with {@link #vmCounts} and {@link #vmNames}. Compiled by
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

    /** Counters per site counted per runtime class: up to 15 classes and the rest. */
    private static final int SLOTS = 16;
    /** Such sites per chunk: 256. */
    private static final int VM_SHIFT = 8;
    private static final int VM_MASK = (1 << VM_SHIFT) - 1;
    private static final VarHandle CLASSES = MethodHandles.arrayElementVarHandle(Object[].class);
    /**
     * Per chunk of such sites: the class of each slot ({@code SLOTS} per site), then, in the last
     * element, the {@code long[]} of the slots' counters (objects, array elements): one read
     * gets both, even while {@link #reset} replaces them.
     */
    private static volatile Object[][] vmChunks = new Object[0][];

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

    /** Counts {@code o}, which the JVM allocated for the call at {@code site}, by its class. */
    public static void vm(Object o, int site) {
        if (o != null) {
            vmCount(o, site);
        }
    }

    /**
     * Counts the inner arrays of {@code o}, a new multi-dimensional array (of
     * {@code multianewarray} or {@code Array.newInstance}), at {@code site} by their class. In a
     * new array every non-null element of an array of arrays is one of them.
     */
    public static void inner(Object o, int site) {
        if (o instanceof Object[] && o.getClass().getComponentType().isArray()) {
            for (Object e : (Object[]) o) {
                if (e != null) {
                    vmCount(e, site);
                    inner(e, site);
                }
            }
        }
    }

    private static void vmCount(Object o, int site) {
        int i = site >>> VM_SHIFT;
        Object[][] n = vmChunks;
        Object[] c = i < n.length ? n[i] : null;
        if (c == null) {
            c = vmChunk(i);
        }
        int base = (site & VM_MASK) * SLOTS;
        int slot = slot(c, base, o.getClass());
        long k = count((long[]) c[SLOTS << VM_SHIFT], (base + slot) << 1, o);
        long e = every;
        if (slot < SLOTS - 1 && (k == 0 || (e > 0 && k % e == 0))) {
            sampleVm(o, site);
        }
    }

    /** The slot of class {@code k} among the {@code SLOTS} of a site from {@code base}. */
    private static int slot(Object[] c, int base, Class<?> k) {
        for (int j = 0; j < SLOTS - 1; j++) {
            Object x = CLASSES.getVolatile(c, base + j);
            if (x == null) {
                if (CLASSES.compareAndSet(c, base + j, null, k)) {
                    return j;
                }
                // Another thread claimed it: look at it again.
                j--;
                continue;
            }
            if (x == k) {
                return j;
            }
        }
        return SLOTS - 1;
    }

    /** The chunk {@code i} of sites counted per class, created on first use. */
    private static synchronized Object[] vmChunk(int i) {
        Object[][] n = vmChunks;
        if (i < n.length && n[i] != null) {
            return n[i];
        }
        // A new array, published by the volatile write alone.
        Object[][] m = new Object[Math.max(i + 1, n.length)][];
        System.arraycopy(n, 0, m, 0, n.length);
        Object[] c = new Object[(SLOTS << VM_SHIFT) + 1];
        c[SLOTS << VM_SHIFT] = new long[(2 * SLOTS) << VM_SHIFT];
        m[i] = c;
        vmChunks = m;
        return c;
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
        slot(new Object[SLOTS], 0, Alloc.class);
        chunks = new long[0][];
        vmChunks = new Object[0][];
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

    /**
     * The counters of the sites counted per class {@code 0..sites}: slot j of site s at
     * {@code 2*(s*16+j)} (objects) and the next (array elements).
     */
    public static long[] vmCounts(int sites) {
        Object[][] c = vmChunks;
        long[] out = new long[2 * SLOTS * sites];
        for (int i = 0; i < c.length; i++) {
            int from = i * 2 * (SLOTS << VM_SHIFT);
            if (c[i] == null || from >= out.length) {
                continue;
            }
            long[] a = (long[]) c[i][SLOTS << VM_SHIFT];
            int n = Math.min(a.length, out.length - from);
            for (int k = 0; k < n; k++) {
                out[from + k] = (long) AT.getVolatile(a, k);
            }
        }
        return out;
    }

    /**
     * The classes of the slots of those sites, as internal names ({@code [I},
     * {@code java/lang/String}), null where no class claimed the slot.
     */
    public static String[] vmNames(int sites) {
        Object[][] c = vmChunks;
        String[] out = new String[SLOTS * sites];
        for (int i = 0; i < c.length; i++) {
            Object[] a = c[i];
            int from = i * (SLOTS << VM_SHIFT);
            if (a == null || from >= out.length) {
                continue;
            }
            int m = Math.min(SLOTS << VM_SHIFT, out.length - from);
            for (int k = 0; k < m; k++) {
                Object x = CLASSES.getVolatile(a, k);
                if (x != null) {
                    out[from + k] = ((Class<?>) x).getName().replace('.', '/');
                }
            }
        }
        return out;
    }

    /** The agent measures (and, when it tracks objects, tags) {@code o}. */
    private static native void sample(Object o, int site);

    /** As {@link #sample}, for a site counted per class. */
    private static native void sampleVm(Object o, int site);
}
