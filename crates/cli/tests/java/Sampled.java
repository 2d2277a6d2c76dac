/**
 * Programs of known hot spots for the sample mode:
 * - `ratio ROUNDS`: two methods of the same loop, one run three times as long: 3:1 CPU;
 * - `counted ROUNDS`: a counted int loop without a safepoint poll inside (with -XX:+UseParallelGC),
 *   inlined into a driver loop whose back edge polls;
 * - `hybrid CALLS`: `root` called CALLS times, hot inside (in `inside`), and as much work
 *   outside every root (in `outside`).
 */
public class Sampled {
    static volatile long sink;

    static long threeParts(int n) {
        long x = 1;
        for (int i = 0; i < 3 * n; i++) {
            x = x * 6364136223846793005L + (i ^ (x >>> 29));
        }
        return x;
    }

    static long onePart(int n) {
        long x = 1;
        for (int i = 0; i < n; i++) {
            x = x * 6364136223846793005L + (i ^ (x >>> 29));
        }
        return x;
    }

    static int sum(int[] a) {
        int s = 0;
        for (int i = 0; i < a.length; i++) {
            s += a[i] * 31 ^ i;
        }
        return s;
    }

    static void counted(int[] a, int rounds) {
        for (int r = 0; r < rounds; r++) {
            a[r & 1023] = r;
            sink += sum(a);
        }
    }

    static long inside(int n) {
        return threeParts(n);
    }

    static long outside(int n) {
        return threeParts(n);
    }

    static void root(int n) {
        sink += inside(n);
    }

    public static void main(String[] args) {
        int n = Integer.parseInt(args[1]);
        switch (args[0]) {
            case "ratio":
                for (int r = 0; r < n; r++) {
                    // ~40 ms a round, varied: no period the sampling ticks could alias with.
                    int k = 2_000_000 + (int) ((r * 7919L) % 100_003);
                    sink += threeParts(k);
                    sink += onePart(k);
                }
                break;
            case "counted":
                int[] a = new int[200_000];
                for (int i = 0; i < a.length; i++) {
                    a[i] = i * 7;
                }
                counted(a, n);
                break;
            case "hybrid":
                for (int r = 0; r < n; r++) {
                    root(3_000_000);
                    sink += outside(3_000_000);
                }
                break;
            default:
                throw new IllegalArgumentException(args[0]);
        }
        System.out.println("done " + (sink != 42));
    }
}
