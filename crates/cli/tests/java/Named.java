/**
 * Three threads, two of them named alike (`alpha`, `beta`, `alpha`), each running the root
 * `work`, which allocates through `make`; one after the other. Prints `thread NAME ID` for
 * each (`Thread.getId()`).
 */
public class Named {
    static Object sink;

    static Object[] make(int n) {
        Object[] a = new Object[n];
        for (int i = 0; i < n; i++) {
            a[i] = new int[4];
        }
        return a;
    }

    static void work(int n) {
        for (int i = 0; i < n; i++) {
            sink = make(10);
        }
    }

    public static void main(String[] args) throws Exception {
        Thread[] threads = {
            new Thread(() -> work(50), "alpha"),
            new Thread(() -> work(50), "beta"),
            new Thread(() -> work(50), "alpha"),
        };
        for (Thread t : threads) {
            t.start();
            t.join();
        }
        for (Thread t : threads) {
            System.out.println("thread " + t.getName() + " " + t.getId());
        }
    }
}
