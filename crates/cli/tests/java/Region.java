// The program of crates/cli/tests/region.rs: each method is called a known number of times.
public class Region {
    static long sink;

    static void sleepy(int ms) throws InterruptedException {
        Thread.sleep(ms);
    }

    static long quick(int n) {
        long s = 0;
        for (int i = 0; i < n; i++) {
            s += i;
        }
        return s;
    }

    static int rec(int n) {
        return n == 0 ? 0 : 1 + rec(n - 1);
    }

    static long threaded() {
        return quick(100);
    }

    static void thrower(int depth) {
        if (depth == 0) {
            throw new IllegalStateException("unwind");
        }
        thrower(depth - 1);
    }

    static void never() {
        sink++;
    }

    public static void main(String[] args) throws Exception {
        for (int i = 0; i < 5; i++) {
            sleepy(20);
        }
        for (int i = 0; i < 1000; i++) {
            sink += quick(10);
        }
        for (int i = 0; i < 30; i++) {
            sink += rec(10);
        }
        for (int i = 0; i < 10; i++) {
            try {
                thrower(4);
            } catch (IllegalStateException e) {
                sink++;
            }
        }
        Thread[] threads = new Thread[4];
        long[] sums = new long[threads.length];
        for (int t = 0; t < threads.length; t++) {
            int slot = t;
            threads[t] = new Thread(() -> {
                for (int i = 0; i < 25; i++) {
                    sums[slot] += threaded();
                }
            }, "worker-" + t);
            threads[t].start();
        }
        for (Thread t : threads) {
            t.join();
        }
        for (long s : sums) {
            sink += s;
        }
        System.out.println("sink " + sink);
    }
}
