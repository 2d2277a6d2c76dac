// The accuracy benchmark's program (bench/accuracy/run.sh). `driver()` runs phases of known
// work and times each with System.nanoTime; run without the agent, those times are the true
// costs, compared with what ferrofluid reports for the same methods under root `driver`.
public class Accuracy {
    static long sink;
    static final String[] PHASES = {"loop1", "loop2", "loop4", "tiny", "small"};
    static final long[] phaseNs = new long[PHASES.length];
    static long driverNs;

    // Loops of relative cost 1, 2 and 4: the same body, 1x, 2x and 4x the iterations.
    static long loop(int n) {
        long x = sink;
        for (int i = 0; i < n; i++) {
            x = x * 6364136223846793005L + i;
        }
        return x;
    }

    static void loop1() {
        sink += loop(UNIT);
    }

    static void loop2() {
        sink += loop(2 * UNIT);
    }

    static void loop4() {
        sink += loop(4 * UNIT);
    }

    static final int UNIT = 20_000;

    // A tiny method called many times: its probes cost far more than its body.
    static int tiny(int i) {
        return i * 31 + 7;
    }

    static void tinyCaller() {
        int s = 0;
        for (int i = 0; i < 1000; i++) {
            s += tiny(i);
        }
        sink += s;
    }

    // Many small methods (a few dozen instructions each).
    static long small0(long x) { return x * 3 + 1; }
    static long small1(long x) { return (x ^ (x >>> 7)) + 11; }
    static long small2(long x) { return x * x + 5; }
    static long small3(long x) { return Long.rotateLeft(x, 13) - 3; }
    static long small4(long x) { long y = x; for (int i = 0; i < 8; i++) y = y * 5 + i; return y; }
    static long small5(long x) { return x / 3 + x % 7; }
    static long small6(long x) { return (x & 0xffff) * 17; }
    static long small7(long x) { long y = 0; for (int i = 0; i < 4; i++) y += x >> i; return y; }
    static long small8(long x) { return ~x + 9; }
    static long small9(long x) { return x * 1_000_003L; }

    static void smallCaller() {
        long x = sink;
        for (int i = 0; i < 100; i++) {
            x = small0(x); x = small1(x); x = small2(x); x = small3(x); x = small4(x);
            x = small5(x); x = small6(x); x = small7(x); x = small8(x); x = small9(x);
        }
        sink += x;
    }

    // Methods of graded cost (about 10 ns, 100 ns and 1 us per call: 6, 64 and 640 iterations
    // of `loop`'s body), each called the same total number of iterations, through a caller.
    static final String[] GRADED = {"m10", "m100", "m1000"};
    static final long[] gradedNs = new long[GRADED.length];
    static long gradedTotalNs;

    // Each with its own loop (a shared callee would be compiled once for all three lengths).
    static long m10(long x) {
        for (int i = 0; i < 6; i++) x = x * 6364136223846793005L + i;
        return x;
    }

    static long m100(long x) {
        for (int i = 0; i < 64; i++) x = x * 6364136223846793005L + i;
        return x;
    }

    static long m1000(long x) {
        for (int i = 0; i < 640; i++) x = x * 6364136223846793005L + i;
        return x;
    }

    static void m10Caller() {
        long x = sink;
        for (int i = 0; i < 6400; i++) x = m10(x);
        sink += x;
    }

    static void m100Caller() {
        long x = sink;
        for (int i = 0; i < 600; i++) x = m100(x);
        sink += x;
    }

    static void m1000Caller() {
        long x = sink;
        for (int i = 0; i < 60; i++) x = m1000(x);
        sink += x;
    }

    /** The second root: probe density from 1 pair per ~10 ns down to 1 per ~1 us. */
    static void graded() {
        long t0 = System.nanoTime();
        for (int r = 0; r < 20; r++) m10Caller();
        long t1 = System.nanoTime();
        for (int r = 0; r < 20; r++) m100Caller();
        long t2 = System.nanoTime();
        for (int r = 0; r < 20; r++) m1000Caller();
        long t3 = System.nanoTime();
        gradedNs[0] += t1 - t0;
        gradedNs[1] += t2 - t1;
        gradedNs[2] += t3 - t2;
    }

    /** The root: each phase's time goes to phaseNs. */
    static void driver() {
        long t0 = System.nanoTime();
        for (int r = 0; r < 100; r++) loop1();
        long t1 = System.nanoTime();
        for (int r = 0; r < 100; r++) loop2();
        long t2 = System.nanoTime();
        for (int r = 0; r < 100; r++) loop4();
        long t3 = System.nanoTime();
        for (int r = 0; r < 200; r++) tinyCaller();
        long t4 = System.nanoTime();
        for (int r = 0; r < 200; r++) smallCaller();
        long t5 = System.nanoTime();
        phaseNs[0] += t1 - t0;
        phaseNs[1] += t2 - t1;
        phaseNs[2] += t3 - t2;
        phaseNs[3] += t4 - t3;
        phaseNs[4] += t5 - t4;
    }

    /**
     * Accuracy CALLS [WARMUP GO]: with WARMUP, first that many untimed calls of both roots (lazy
     * revelation's retransformations and the recompilations they cause happen then), then
     * `warm PID` on stdout and a wait, outside the roots, for the file GO, which run.sh creates
     * once it has reset the profile (`ferrofluid attach PID --reset`); then CALLS timed calls.
     */
    public static void main(String[] args) throws Exception {
        int calls = args.length > 0 ? Integer.parseInt(args[0]) : 20;
        int warmup = args.length > 2 ? Integer.parseInt(args[1]) : 0;
        if (warmup > 0) {
            for (int c = 0; c < warmup; c++) {
                driver();
                graded();
            }
            java.util.Arrays.fill(phaseNs, 0);
            java.util.Arrays.fill(gradedNs, 0);
            System.out.println("warm " + ProcessHandle.current().pid());
            System.out.flush();
            java.nio.file.Path go = java.nio.file.Path.of(args[2]);
            for (int waited = 0; !java.nio.file.Files.exists(go) && waited < 60_000; waited += 5) {
                Thread.sleep(5);
            }
        }
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        long cpu = mx.getCurrentThreadCpuTime();
        for (int c = 0; c < calls; c++) {
            long t = System.nanoTime();
            driver();
            driverNs += System.nanoTime() - t;
            t = System.nanoTime();
            graded();
            gradedTotalNs += System.nanoTime() - t;
        }
        cpu = mx.getCurrentThreadCpuTime() - cpu;
        System.out.println("driver " + driverNs);
        // The driver calls' thread CPU time: close to `driver` unless the machine was busy.
        System.out.println("driver_cpu " + cpu);
        for (int p = 0; p < PHASES.length; p++) {
            System.out.println(PHASES[p] + " " + phaseNs[p]);
        }
        System.out.println("graded " + gradedTotalNs);
        for (int p = 0; p < GRADED.length; p++) {
            System.out.println(GRADED[p] + " " + gradedNs[p]);
        }
        System.out.println("sink " + sink);
    }
}
