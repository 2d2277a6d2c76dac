/**
 * `--adaptive`: `small` is called often and is far shorter than its probes; `big` is not. The
 * argument is `big`'s iterations per round (200000 by default): the longer it runs, the smaller
 * the share of the round that `small`'s gates would cost once dropped.
 */
public class Adaptive {
    static int sink;

    // Not trivial (a branch), a few nanoseconds.
    static int small(int x) {
        if ((x & 7) == 3) {
            return x * 3 + 1;
        }
        return x ^ (x >>> 3);
    }

    // A loop: milliseconds per call.
    static int big(int n) {
        int s = 0;
        for (int i = 0; i < n; i++) {
            s += (s >>> 1) ^ i;
        }
        return s;
    }

    static void round(int bigIterations) {
        for (int i = 0; i < 20_000; i++) {
            sink += small(i);
        }
        sink += big(bigIterations);
    }

    public static void main(String[] args) {
        int bigIterations = args.length > 0 ? Integer.parseInt(args[0]) : 200_000;
        // Long enough for the agent's first looks (half a second after collection starts).
        long end = System.nanoTime() + 2_500_000_000L;
        int rounds = 0;
        while (System.nanoTime() < end) {
            round(bigIterations);
            rounds++;
        }
        System.out.println(rounds);
    }
}
