// Recursion far deeper than the profiler's tree depth bound, inside the root `Deep.run`.
public class Deep {
    static final int DEPTH = 20_000;

    static long down(int n) {
        return n == 0 ? 1 : down(n - 1) + 1;
    }

    static void run() {
        System.out.println("depth " + down(DEPTH));
    }

    public static void main(String[] args) throws Exception {
        // A big stack of its own: the JVM's default would overflow at this depth.
        Thread t = new Thread(null, Deep::run, "deep", 1L << 30);
        t.start();
        t.join();
    }
}
