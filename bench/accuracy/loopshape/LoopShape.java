// Does a call before and after a hot loop (a Java call, a JNI native, a try/catch as probes add) slow
// the loop itself? Written when the accuracy benchmark seemed to charge 0.1-1 us methods ~2x (a
// counting error of its compare.py, since fixed).
// Run: bench/accuracy/loopshape/run.sh
public class LoopShape {
    static long sink;
    static int calls;
    static void probe(int id) { calls += id; }           // run with dontinline
    static native void nprobe(int id);                   // libnprobe.so: does nothing
    static long nativeBoth(long x) {
        nprobe(1);
        for (int i = 0; i < 640; i++) x = x * 6364136223846793005L + i;
        nprobe(2);
        return x;
    }
    static long plain(long x) {
        for (int i = 0; i < 640; i++) x = x * 6364136223846793005L + i;
        return x;
    }
    static long callBefore(long x) {
        probe(1);
        for (int i = 0; i < 640; i++) x = x * 6364136223846793005L + i;
        return x;
    }
    static long callBoth(long x) {
        probe(1);
        for (int i = 0; i < 640; i++) x = x * 6364136223846793005L + i;
        probe(2);
        return x;
    }
    static long tryBoth(long x) {
        probe(1);
        try {
            for (int i = 0; i < 640; i++) x = x * 6364136223846793005L + i;
            probe(2);
            return x;
        } catch (Throwable t) { probe(3); throw t; }
    }
    public static void main(String[] a) {
        System.load(System.getProperty("user.dir") + "/libnprobe.so");
        String[] names = {"plain", "callBefore", "callBoth", "tryBoth", "nativeBoth"};
        for (int round = 0; round < 6; round++) {
            StringBuilder sb = new StringBuilder();
            for (int m = 0; m < 5; m++) {
                long x = sink, t0 = System.nanoTime();
                for (int r = 0; r < 200_000; r++) {
                    switch (m) {
                        case 0: x = plain(x); break;
                        case 1: x = callBefore(x); break;
                        case 2: x = callBoth(x); break;
                        case 3: x = tryBoth(x); break;
                        default: x = nativeBoth(x); break;
                    }
                }
                long ns = System.nanoTime() - t0;
                sink += x;
                sb.append(String.format("%s %.2f ns/iter  ", names[m], ns / (200_000.0 * 640)));
            }
            System.out.println(sb);
        }
    }
}
