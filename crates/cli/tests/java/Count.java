// The count mode's test program: the JP paper's Fig. 4 (f loops 10 times calling h() and g(i),
// g(i) calls h() i times), a method whose blocks exceptions cut short, and 8 threads.
public class Count {
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

    // One block under Default; `a[n] = x` throws for n = 1, cutting it short.
    static int cut(int n) {
        int x = n + 7;
        int[] a = new int[1];
        a[n] = x;
        x = x * 3;
        return x;
    }

    static void cuts() {
        for (int i = 0; i < 4; i++) {
            try {
                sink += cut(i % 2);
            } catch (ArrayIndexOutOfBoundsException e) {
                sink--;
            }
        }
    }

    static void work() {
        for (int i = 0; i < 100; i++) {
            g(i % 4);
        }
    }

    public static void main(String[] args) throws Exception {
        f();
        cuts();
        Thread[] threads = new Thread[8];
        for (int t = 0; t < threads.length; t++) {
            threads[t] = new Thread(Count::work, "worker-" + t);
            threads[t].start();
        }
        for (Thread t : threads) {
            t.join();
        }
        System.out.println("done");
    }
}
