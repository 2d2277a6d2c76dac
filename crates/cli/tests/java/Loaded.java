/**
 * Compensation on a busy machine: {@code work} (the root) calls {@code leaf} 2,000 times, and
 * {@code plain}, an identical copy never under a root (hence never instrumented), is timed by
 * the program itself right before each call of {@code work}: the truth the profile's
 * compensated time of {@code work} is compared with. Runs for at least {@code args[0]} ms.
 * Each call's input is the previous call's result, so that the processor cannot overlap one
 * call's arithmetic with the next one's where the copy is compiled as one loop: a probe between
 * calls would forbid that overlap, and the comparison would measure it instead of the
 * compensation.
 */
public class Loaded {
    static long sink;

    static long work(int n) {
        long s = 0;
        for (int i = 0; i < n; i++) {
            s = leaf(s + i);
        }
        return s;
    }

    static long leaf(long x0) {
        long x = x0;
        for (int k = 0; k < 300; k++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        return x;
    }

    static long plain(int n) {
        long s = 0;
        for (int i = 0; i < n; i++) {
            s = plainLeaf(s + i);
        }
        return s;
    }

    static long plainLeaf(long x0) {
        long x = x0;
        for (int k = 0; k < 300; k++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        return x;
    }

    public static void main(String[] args) {
        long end = System.nanoTime() + Long.parseLong(args[0]) * 1_000_000L;
        long calls = 0;
        long plainNs = 0;
        while (System.nanoTime() < end) {
            long t0 = System.nanoTime();
            sink += plain(2000);
            plainNs += System.nanoTime() - t0;
            sink += work(2000);
            calls++;
        }
        System.out.println("calls " + calls + " plain " + plainNs + " sink " + (sink & 1));
    }
}
