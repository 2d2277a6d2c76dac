// The count mode's attach test: the JP paper's Fig. 4 methods (as in Count.java), called before
// the profiler attaches and again after it, from main and from a thread that ends before the
// profile is taken.
public class CountAttach {
    static int sink;

    static void f() {
        for (int i = 0; i < 10; i++) {
            h();
            g(i);
        }
    }

    static void g(int i) {
        for (int j = 0; j < i; j++) {
            h();
        }
    }

    static void h() {
        sink++;
    }

    static void work() {
        for (int i = 0; i < 100; i++) {
            g(i % 4);
        }
    }

    // args[0]: a file whose existence says the profiler is attached.
    public static void main(String[] args) throws Exception {
        // Before the profiler: none of these calls may be counted.
        for (int r = 0; r < 3; r++) {
            f();
            work();
        }
        System.out.println("ready");
        System.out.flush();
        java.io.File go = new java.io.File(args[0]);
        while (!go.exists()) {
            Thread.sleep(10);
        }
        f();
        Thread ended = new Thread(CountAttach::work, "ended");
        ended.start();
        ended.join();
        System.out.println("done");
    }
}
