/** Two methods of the same loop, one run three times as long as the other: 3:1 CPU. */
public class Ratio {
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

    public static void main(String[] args) {
        int rounds = Integer.parseInt(args[0]);
        for (int r = 0; r < rounds; r++) {
            // ~40 ms a round, varied: no period the sampling ticks could alias with.
            int n = 2_000_000 + (int) ((r * 7919L) % 100_003);
            sink += threeParts(n);
            sink += onePart(n);
        }
        System.out.println("done " + (sink != 42));
    }
}
