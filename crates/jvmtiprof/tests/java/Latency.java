import java.io.BufferedReader;
import java.io.InputStreamReader;

/** Known numbers of calls: returns, exceptions, constructors, several threads. */
public class Latency {
    static volatile int sink;

    static class Work {
        int base;

        Work(int base) {
            this.base = base;
        }

        static int fast(int x) {
            return x * 2 + 1;
        }

        static void slow() throws InterruptedException {
            Thread.sleep(1);
        }

        static void fails(int i) {
            if (i >= 0) {
                throw new IllegalStateException("fails " + i);
            }
        }

        int twice(int x) {
            return fast(x) + fast(base);
        }
    }

    static void workload() throws Exception {
        for (int i = 0; i < 1000; i++) {
            sink += Work.fast(i);
        }
        for (int i = 0; i < 50; i++) {
            Work.slow();
        }
        for (int i = 0; i < 30; i++) {
            try {
                Work.fails(i);
            } catch (IllegalStateException e) {
                sink++;
            }
        }
        Thread[] threads = new Thread[2];
        for (int t = 0; t < threads.length; t++) {
            final int base = t;
            threads[t] = new Thread(() -> {
                Work w = new Work(base);
                for (int i = 0; i < 250; i++) {
                    sink += w.twice(i);
                }
            });
            threads[t].start();
        }
        for (Thread t : threads) {
            t.join();
        }
        for (int i = 0; i < 5; i++) {
            sink += new Work(i).base;
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("wait")) {
            // Loaded and compiled before the agent attaches: these calls are not counted.
            for (int i = 0; i < 20_000; i++) {
                sink += Work.fast(i) + new Work(i).twice(i);
            }
            System.out.println("ready");
            new BufferedReader(new InputStreamReader(System.in)).readLine();
        }
        workload();
        System.out.println("done " + (sink != 42));
    }
}
