// The push tests' program: `work` (which calls `g`, which calls `h`) in a loop, a millisecond's
// sleep between rounds, for args[0] ms (0: until killed); "ready" first, "done" at the end.
public class Push {
    static long sink;

    static void h(int i) {
        sink += i;
    }

    static void g(int n) {
        for (int i = 0; i < n; i++) {
            h(i);
        }
    }

    static void work() {
        for (int i = 0; i < 100; i++) {
            g(i % 7);
        }
    }

    public static void main(String[] args) throws Exception {
        long ms = Long.parseLong(args[0]);
        long end = System.nanoTime() + ms * 1_000_000L;
        System.out.println("ready");
        System.out.flush();
        while (ms == 0 || System.nanoTime() < end) {
            work();
            Thread.sleep(1);
        }
        System.out.println("done");
    }
}
