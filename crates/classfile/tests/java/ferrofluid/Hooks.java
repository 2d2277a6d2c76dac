package ferrofluid;

/** Counting hooks for the engine's JVM tests: per-id counters printed at exit. */
public final class Hooks {
    static final int N = 4096;
    static final long[] enter = new long[N], exit = new long[N], unwind = new long[N], blocks = new long[N];
    static final long[] alloc = new long[N], nativeEnter = new long[N], nativeExit = new long[N];
    static final java.util.Map<String, Long> receivers = new java.util.TreeMap<>();
    static {
        Runtime.getRuntime().addShutdownHook(new Thread(Hooks::dump));
    }
    public static void enter(int id) { enter[id]++; }
    public static void exit(int id) { exit[id]++; }
    public static void unwind(int id) { unwind[id]++; }
    public static void exitBlocks(int id, int n) { exit[id]++; blocks[id] += n; }
    public static void unwindBlocks(int id, int n) { unwind[id]++; blocks[id] += n; }
    /** Each entry's own context: its exit must hand back exactly this object. */
    public static Object enterContext(int id) { enter[id]++; return new int[] {id}; }
    /** What each frame saves after its entry: its exits must hand it back too. */
    public static int savedContext(Object c) { return ((int[]) c)[0] * 7 + 3; }
    public static void exitContext(Object c, int id, int n, int saved) { check(c, id, saved); exitBlocks(id, n); }
    public static void unwindContext(Object c, int id, int n, int saved) { check(c, id, saved); unwindBlocks(id, n); }
    /** A leaf's only probe, at entry (nothing at its exits). */
    public static void leafContext(int id) { enter[id]++; }
    /** A leaf's only probe under block counting: its entry, with the bytecodes of each call. */
    public static void leafBlocks(int id, int n) { enter[id]++; blocks[id] += n; }
    static void check(Object c, int id, int saved) {
        if (((int[]) c)[0] != id) throw new AssertionError("context of " + ((int[]) c)[0] + " at " + id);
        if (saved != id * 7 + 3) throw new AssertionError("saved " + saved + " at " + id);
    }
    public static void alloc(Object o, int site) { if (o != null) alloc[site]++; }
    public static void nativeEnter(int id) { nativeEnter[id]++; }
    public static void nativeExit(int id) { nativeExit[id]++; }
    public static synchronized void receiver(Object o, int site) {
        String k = site + " " + (o == null ? "null" : o.getClass().getName());
        receivers.merge(k, 1L, Long::sum);
    }
    public static void site(int site) { receiver(null, site); }
    static void dump() {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < N; i++) {
            if (enter[i] + exit[i] + unwind[i] + alloc[i] + nativeEnter[i] + nativeExit[i] == 0) continue;
            b.append("HOOK ").append(i).append(' ').append(enter[i]).append(' ').append(exit[i]).append(' ')
             .append(unwind[i]).append(' ').append(blocks[i]).append(' ').append(alloc[i]).append(' ')
             .append(nativeEnter[i]).append(' ').append(nativeExit[i]).append('\n');
        }
        synchronized (Hooks.class) {
            receivers.forEach((k, v) -> b.append("RECV ").append(k).append(' ').append(v).append('\n'));
        }
        System.err.print(b);
    }

    /** Gateway {@code kind} (reflection, method handles) is entered with {@code target}. */
    public static void reveal(Object target, int kind) {}
}
