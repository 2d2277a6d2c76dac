// Shapes that are hard for probes: loops at offset 0, methods ending in athrow,
// synchronized methods and blocks, constructors with branches before super(),
// nested try/finally, wide locals, long/double arithmetic.
import java.util.function.IntSupplier;

public class Tricky extends Thread {
    private int count;

    public Tricky(boolean flag) {
        super(flag ? "yes" : "no");
        count = flag ? 1 : 2;
    }

    public Tricky() {
        this(Integer.getInteger("tricky", 0) > 0);
    }

    static int loopAtZero(int n) {
        while (true) {
            if (--n < 0) return n;
        }
    }

    static void alwaysThrows(String why) {
        throw new IllegalStateException(why);
    }

    synchronized int locked() {
        return ++count;
    }

    int block(Object lock) {
        synchronized (lock) {
            try {
                return count / (count - 1);
            } finally {
                count++;
            }
        }
    }

    static long wide(long a, double b) {
        long l0 = a, l1 = a + 1, l2 = a + 2, l3 = a + 3, l4 = a + 4, l5 = a + 5, l6 = a + 6;
        long l7 = a + 7, l8 = a + 8, l9 = a + 9, l10 = a + 10, l11 = a + 11, l12 = a + 12;
        double[] big = new double[300];
        int[][] grid = new int[3][4];
        long total = 0;
        for (int i = 0; i < 300; i++) {
            total += (long) (big[i] + b) + grid[i % 3][i % 4];
        }
        return total + l0 + l1 + l2 + l3 + l4 + l5 + l6 + l7 + l8 + l9 + l10 + l11 + l12;
    }

    static int nested(int x) {
        try {
            try {
                if (x > 3) throw new RuntimeException();
                return x;
            } catch (RuntimeException e) {
                return -x;
            } finally {
                x++;
            }
        } finally {
            x--;
        }
    }

    static IntSupplier capture(int x) {
        return () -> x * 2;
    }

    native int nativeMethod(long handle);

    @Override
    public void run() {
        for (;;) {
            if (count++ > 10) break;
        }
    }
}
