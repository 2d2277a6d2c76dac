import java.io.File;

/**
 * What an allocation site costs before and after a narrowing takes its probe out
 * (docs/decisions/0046-narrowing-allocation-sites.md). Each phase: best of 5 runs of N
 * allocations of `Noise` at one site (its own class, so a narrowing retransforms it) and as many
 * of `Entry` at another. Between the phases the program waits for the file GO, if given (the
 * test of a narrowing attach creates it once narrowed).
 * Usage: java NarrowBench N [GO]; prints "phase1 NS" and "phase2 NS", ns per allocation pair.
 */
public class NarrowBench {
    static volatile Object sink;

    static final class Entry {
        final int key;

        Entry(int key) {
            this.key = key;
        }
    }

    static final class Noise {
        final int value;

        Noise(int value) {
            this.value = value;
        }
    }

    static final class Sites {
        static Object noise(int i) {
            return new Noise(i);
        }

        static Object entry(int i) {
            return new Entry(i);
        }
    }

    static double phase(int n) {
        long best = Long.MAX_VALUE;
        for (int run = 0; run < 5; run++) {
            long t0 = System.nanoTime();
            for (int i = 0; i < n; i++) {
                sink = Sites.noise(i);
                sink = Sites.entry(i);
            }
            best = Math.min(best, System.nanoTime() - t0);
        }
        return (double) best / n;
    }

    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]);
        System.out.printf("phase1 %.1f%n", phase(n));
        if (args.length > 1) {
            File go = new File(args[1]);
            while (!go.exists()) {
                Thread.sleep(5);
            }
        }
        System.out.printf("phase2 %.1f%n", phase(n));
    }
}
