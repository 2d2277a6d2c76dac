package ferrofluid;

/**
 * Drives {@code Alloc} without an agent: 64 threads (twice the sets of counters a thread may
 * claim, so that some count in the shared set) allocate at two sites, an object's and an array's
 * of three elements (its id marked), in the chunk of counters of site 0 and in a later one. The
 * objects the agent would measure reach the missing native, whose error is caught: they were
 * counted first. Prints each site's objects and elements, then again after {@link Alloc#forget};
 * args: every, bytes and, if given, the counters the claimed sets may make.
 */
public final class AllocDriver {
    static final int THREADS = 64;
    static final int ROUNDS = 2000;
    static final int OBJECT = 5;
    static final int ARRAY = 5000;

    public static void main(String[] args) throws Exception {
        Alloc.reset(Long.parseLong(args[0]), Long.parseLong(args[1]));
        if (args.length > 2) {
            Alloc.counterBudgetForTest(Long.parseLong(args[2]));
        }
        Thread[] threads = new Thread[THREADS];
        java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(THREADS);
        for (int t = 0; t < THREADS; t++) {
            threads[t] = new Thread(() -> {
                try {
                    start.await();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
                for (int i = 0; i < ROUNDS; i++) {
                    count(new Object(), OBJECT);
                    count(new int[3], ARRAY | Integer.MIN_VALUE);
                }
            });
            threads[t].start();
        }
        for (Thread t : threads) {
            t.join();
        }
        print(Alloc.counts(ARRAY + 1));
        Alloc.forget();
        print(Alloc.counts(ARRAY + 1));
    }

    private static void print(long[] c) {
        System.out.println(c[2 * OBJECT] + " " + c[2 * OBJECT + 1]);
        System.out.println(c[2 * ARRAY] + " " + c[2 * ARRAY + 1]);
    }

    private static void count(Object o, int site) {
        try {
            Alloc.alloc(o, site);
        } catch (UnsatisfiedLinkError e) {
            // The agent's native: not here.
        }
    }
}
