// Per-call cost of the probes, driven from Java: `java HookBench MODE [calls]`.
//   tiny     a tiny static method in a loop (uninstrumented, or instrumented by the agent)
//   guarded  the same with a Java-side guard (a volatile flag checked before any hook would be called),
//            what a "return fast in Java" design costs when nothing is recorded
//   root     the loop inside a root method, so every call of tiny is recorded
// Prints the best of 5 timed runs after 3 warm-ups, in ns per call of tiny.
public class HookBench {
    static volatile boolean FLAG;
    static long sink;

    static int tiny(int x) {
        return x + 1;
    }

    static int guarded(int x) {
        if (FLAG) {
            sink += x;
        }
        return x + 1;
    }

    static long loopTiny(int n) {
        long s = 0;
        for (int i = 0; i < n; i++) {
            s += tiny(i);
        }
        return s;
    }

    static long loopGuarded(int n) {
        long s = 0;
        for (int i = 0; i < n; i++) {
            s += guarded(i);
        }
        return s;
    }

    static long root(int n) {
        return loopTiny(n);
    }

    static void never() {
    }

    public static void main(String[] args) {
        String mode = args[0];
        int n = args.length > 1 ? Integer.parseInt(args[1]) : 10_000_000;
        double best = Double.MAX_VALUE;
        for (int run = 0; run < 8; run++) {
            long t0 = System.nanoTime();
            long s;
            switch (mode) {
                case "tiny": s = loopTiny(n); break;
                case "guarded": s = loopGuarded(n); break;
                case "root": s = root(n); break;
                default: throw new IllegalArgumentException(mode);
            }
            long t1 = System.nanoTime();
            sink += s;
            if (run >= 3) {
                best = Math.min(best, (t1 - t0) / (double) n);
            }
        }
        System.out.printf("%s %.2f ns/call%n", mode, best);
    }
}
