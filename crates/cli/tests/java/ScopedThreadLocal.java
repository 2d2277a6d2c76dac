/**
 * A root that reads a thread-local from threads that have none yet: the first lookup of every
 * thread allocates inside `ThreadLocal`'s own code while the thread is inside the root.
 */
public class ScopedThreadLocal {
    static final ThreadLocal<StringBuilder> BUFFER = new ThreadLocal<>();

    static int work(int i) {
        StringBuilder b = BUFFER.get();
        if (b == null) {
            b = new StringBuilder();
            BUFFER.set(b);
        }
        b.setLength(0);
        b.append(i);
        return b.length();
    }

    static long root(int n) {
        long s = 0;
        for (int i = 0; i < n; i++) {
            s += work(i);
        }
        return s;
    }

    public static void main(String[] args) throws Exception {
        Thread[] threads = new Thread[4];
        long[] out = new long[threads.length];
        for (int k = 0; k < threads.length; k++) {
            final int t = k;
            threads[k] = new Thread(() -> {
                for (int r = 0; r < 50; r++) {
                    out[t] += root(1000);
                }
            });
            threads[k].start();
        }
        long sum = 0;
        for (int k = 0; k < threads.length; k++) {
            threads[k].join();
            sum += out[k];
        }
        System.out.println(sum);
    }
}
